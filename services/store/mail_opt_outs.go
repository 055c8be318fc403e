package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// MailOptedOut is whether user turned off the e-mails of topic.
func (s *Store) MailOptedOut(ctx context.Context, userID int64, topic string) (bool, error) {
	var n int64
	if err := s.with(ctx).Model(&models.MailOptOut{}).Where("user_id = ? AND topic = ?", userID, topic).Count(&n).Error; err != nil {
		return false, fmt.Errorf("e-mails of %s to user %d: %w", topic, userID, err)
	}
	return n > 0, nil
}

// SetMailOptOut turns the e-mails of topic to user off (out) or back on; changed is
// false when they already were.
func (s *Store) SetMailOptOut(ctx context.Context, userID int64, topic string, out bool) (changed bool, err error) {
	db := s.with(ctx)
	if out {
		db = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.MailOptOut{UserID: userID, Topic: topic})
	} else {
		db = db.Where("user_id = ? AND topic = ?", userID, topic).Delete(&models.MailOptOut{})
	}
	if err := translate(db.Error); err != nil {
		return false, fmt.Errorf("set e-mails of %s to user %d off=%t: %w", topic, userID, out, err)
	}
	return db.RowsAffected > 0, nil
}

// MailOptOutUsers returns the users, of ids, who turned off the e-mails of topic.
func (s *Store) MailOptOutUsers(ctx context.Context, topic string, ids []int64) (map[int64]bool, error) {
	out := make(map[int64]bool)
	if len(ids) == 0 {
		return out, nil
	}
	var users []int64
	if err := s.with(ctx).Model(&models.MailOptOut{}).Where("topic = ? AND user_id IN ?", topic, ids).Pluck("user_id", &users).Error; err != nil {
		return nil, fmt.Errorf("who turned off e-mails of %s: %w", topic, err)
	}
	for _, id := range users {
		out[id] = true
	}
	return out, nil
}
