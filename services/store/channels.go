package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// CreateNotificationChannel inserts c; a taken name is ErrConflict.
func (s *Store) CreateNotificationChannel(ctx context.Context, c *models.NotificationChannel) error {
	if err := translate(s.with(ctx).Create(c).Error); err != nil {
		return fmt.Errorf("create channel %s: %w", c.Name, err)
	}
	return nil
}

// UpdateNotificationChannel saves the name, target and enabled flag of c.
func (s *Store) UpdateNotificationChannel(ctx context.Context, c *models.NotificationChannel) error {
	res := s.with(ctx).Model(&models.NotificationChannel{}).Where("id = ?", c.ID).
		Updates(map[string]any{"name": c.Name, "kind": c.Kind, "target": c.Target, "enabled": c.Enabled})
	if err := translate(res.Error); err != nil {
		return fmt.Errorf("update channel %s: %w", c.Name, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("update channel %d: %w", c.ID, ErrNotFound)
	}
	return nil
}

// NotificationChannels returns every channel by name.
func (s *Store) NotificationChannels(ctx context.Context) ([]models.NotificationChannel, error) {
	var out []models.NotificationChannel
	if err := s.with(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	return out, nil
}
