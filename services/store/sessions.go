package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateSession inserts a login session.
func (s *Store) CreateSession(ctx context.Context, sess *models.Session) error {
	if err := translate(s.with(ctx).Create(sess).Error); err != nil {
		return fmt.Errorf("create session of user %d: %w", sess.UserID, err)
	}
	return nil
}

// SessionByID returns the session whose id (the hash of its cookie) is id.
func (s *Store) SessionByID(ctx context.Context, id string) (*models.Session, error) {
	var sess models.Session
	if err := translate(s.with(ctx).Where("id = ?", id).First(&sess).Error); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return &sess, nil
}

// TouchSession records that the session was used at at.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	if err := s.with(ctx).Model(&models.Session{}).Where("id = ?", id).Update("last_seen_at", at.UTC()).Error; err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession ends one session; ending one that is gone is not an error.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if err := s.with(ctx).Where("id = ?", id).Delete(&models.Session{}).Error; err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteSessionsOfUser ends every session of the user and returns how many there were.
func (s *Store) DeleteSessionsOfUser(ctx context.Context, userID int64) (int64, error) {
	res := s.with(ctx).Where("user_id = ?", userID).Delete(&models.Session{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete sessions of user %d: %w", userID, res.Error)
	}
	return res.RowsAffected, nil
}

// DeleteDeadSessions removes sessions past their absolute expiry at now or unused since idleSince.
func (s *Store) DeleteDeadSessions(ctx context.Context, now, idleSince time.Time) (int64, error) {
	res := s.with(ctx).Where("expires_at <= ? OR last_seen_at < ?", now.UTC(), idleSince.UTC()).Delete(&models.Session{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete dead sessions: %w", res.Error)
	}
	return res.RowsAffected, nil
}
