package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateJoinToken inserts t; only the token's hash is ever stored.
func (s *Store) CreateJoinToken(ctx context.Context, t *models.JoinToken) error {
	if err := translate(s.with(ctx).Create(t).Error); err != nil {
		return fmt.Errorf("create join token %s: %w", t.Name, err)
	}
	return nil
}

// JoinTokenByHash returns the join token whose SHA-256 is hash.
func (s *Store) JoinTokenByHash(ctx context.Context, hash string) (*models.JoinToken, error) {
	var t models.JoinToken
	if err := translate(s.with(ctx).Where("hash = ?", hash).First(&t).Error); err != nil {
		return nil, fmt.Errorf("join token: %w", err)
	}
	return &t, nil
}

// JoinTokens returns every join token, newest first.
func (s *Store) JoinTokens(ctx context.Context) ([]models.JoinToken, error) {
	var out []models.JoinToken
	if err := s.with(ctx).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list join tokens: %w", err)
	}
	return out, nil
}

// UseJoinToken marks token id used at `at`. A single-use token already used, or a
// revoked one, is ErrStale: two agents racing with one token cannot both join.
func (s *Store) UseJoinToken(ctx context.Context, id int64, at time.Time) error {
	res := s.with(ctx).Model(&models.JoinToken{}).
		Where("id = ? AND revoked_at IS NULL AND (reusable OR used_at IS NULL)", id).
		Update("used_at", at)
	if res.Error != nil {
		return fmt.Errorf("use join token %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("use join token %d: %w: already used or revoked", id, ErrStale)
	}
	return nil
}

// RevokeJoinToken revokes the join tokens called name that are not revoked yet.
func (s *Store) RevokeJoinToken(ctx context.Context, name string, at time.Time) error {
	res := s.with(ctx).Model(&models.JoinToken{}).Where("name = ? AND revoked_at IS NULL", name).Update("revoked_at", at)
	if res.Error != nil {
		return fmt.Errorf("revoke join token %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("revoke join token %s: %w", name, ErrNotFound)
	}
	return nil
}
