package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateAPIToken inserts a personal API token.
func (s *Store) CreateAPIToken(ctx context.Context, t *models.APIToken) error {
	if err := translate(s.with(ctx).Create(t).Error); err != nil {
		return fmt.Errorf("create API token %s: %w", t.Name, err)
	}
	return nil
}

// APITokenByID returns the token with id.
func (s *Store) APITokenByID(ctx context.Context, id int64) (*models.APIToken, error) {
	var t models.APIToken
	if err := translate(s.with(ctx).First(&t, id).Error); err != nil {
		return nil, fmt.Errorf("API token %d: %w", id, err)
	}
	return &t, nil
}

// APITokensOfUser returns the user's tokens, newest first.
func (s *Store) APITokensOfUser(ctx context.Context, userID int64) ([]models.APIToken, error) {
	var out []models.APIToken
	if err := s.with(ctx).Where("user_id = ?", userID).Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("API tokens of user %d: %w", userID, err)
	}
	return out, nil
}

// RevokeAPIToken marks the token revoked at at; a token revoked already is ErrStale.
func (s *Store) RevokeAPIToken(ctx context.Context, id int64, at time.Time) error {
	res := s.with(ctx).Model(&models.APIToken{}).Where("id = ? AND revoked_at IS NULL", id).Update("revoked_at", at.UTC())
	if res.Error != nil {
		return fmt.Errorf("revoke API token %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("revoke API token %d: %w", id, ErrStale)
	}
	return nil
}

// TouchAPIToken records that the token was used at at.
func (s *Store) TouchAPIToken(ctx context.Context, id int64, at time.Time) error {
	if err := s.with(ctx).Model(&models.APIToken{}).Where("id = ?", id).Update("last_used_at", at.UTC()).Error; err != nil {
		return fmt.Errorf("touch API token %d: %w", id, err)
	}
	return nil
}
