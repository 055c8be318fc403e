package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateOutboxMail queues an e-mail.
func (s *Store) CreateOutboxMail(ctx context.Context, m *models.OutboxMail) error {
	if err := translate(s.with(ctx).Create(m).Error); err != nil {
		return fmt.Errorf("queue e-mail about %s: %w", m.Link, err)
	}
	return nil
}

// DueOutboxMails returns up to limit pending e-mails whose next attempt is due at now.
func (s *Store) DueOutboxMails(ctx context.Context, now time.Time, limit int) ([]models.OutboxMail, error) {
	var out []models.OutboxMail
	err := s.with(ctx).Where("state = ? AND next_attempt_at <= ?", models.DeliveryPending, now.UTC()).
		Order("next_attempt_at, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("due e-mails: %w", err)
	}
	return out, nil
}

// UpdateOutboxMail records the outcome of an attempt on m.
func (s *Store) UpdateOutboxMail(ctx context.Context, m *models.OutboxMail) error {
	err := s.with(ctx).Model(&models.OutboxMail{}).Where("id = ?", m.ID).Updates(map[string]any{
		"state": m.State, "attempts": m.Attempts, "next_attempt_at": m.NextAttemptAt, "last_error": m.LastError, "sent_at": m.SentAt,
	}).Error
	if err != nil {
		return fmt.Errorf("update e-mail %d: %w", m.ID, err)
	}
	return nil
}

// OutboxMailsAbout returns the e-mails queued about a portal path, oldest first.
func (s *Store) OutboxMailsAbout(ctx context.Context, link string) ([]models.OutboxMail, error) {
	var out []models.OutboxMail
	if err := s.with(ctx).Where("link = ?", link).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("e-mails about %s: %w", link, err)
	}
	return out, nil
}

// DeleteEndedOutboxMails deletes the e-mails sent or given up on before before (by
// when they were sent or last tried) and says how many there were.
func (s *Store) DeleteEndedOutboxMails(ctx context.Context, before time.Time) (int64, error) {
	res := s.with(ctx).Where("state <> ? AND COALESCE(sent_at, next_attempt_at) < ?", models.DeliveryPending, before.UTC()).
		Delete(&models.OutboxMail{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete ended e-mails: %w", res.Error)
	}
	return res.RowsAffected, nil
}
