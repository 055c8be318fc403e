package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// JobSubmitKey returns user's idempotency key of a job submission, made at or after since.
func (s *Store) JobSubmitKey(ctx context.Context, userID int64, key string, since time.Time) (*models.JobSubmitKey, error) {
	var k models.JobSubmitKey
	err := s.with(ctx).Where("user_id = ? AND idempotency_key = ? AND created_at >= ?", userID, key, since.UTC()).Take(&k).Error
	if err := translate(err); err != nil {
		return nil, fmt.Errorf("submission key of user %d: %w", userID, err)
	}
	return &k, nil
}

// CreateJobSubmitKey stores k; a key the user holds already is ErrConflict.
func (s *Store) CreateJobSubmitKey(ctx context.Context, k *models.JobSubmitKey) error {
	if err := translate(s.with(ctx).Create(k).Error); err != nil {
		return fmt.Errorf("store the submission key of user %d: %w", k.UserID, err)
	}
	return nil
}

// DeleteJobSubmitKeysBefore deletes the keys made before t and says how many.
func (s *Store) DeleteJobSubmitKeysBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.with(ctx).Where("created_at < ?", t.UTC()).Delete(&models.JobSubmitKey{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete submission keys before %s: %w", t.UTC().Format(time.RFC3339), res.Error)
	}
	return res.RowsAffected, nil
}
