package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateAlertDeliveries queues notifications of an alert, one per channel.
func (s *Store) CreateAlertDeliveries(ctx context.Context, ds []models.AlertDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	if err := translate(s.with(ctx).Create(&ds).Error); err != nil {
		return fmt.Errorf("queue %d notifications of alert %d: %w", len(ds), ds[0].AlertID, err)
	}
	return nil
}

// DueAlertDeliveries returns up to limit pending deliveries whose next attempt is due at now.
func (s *Store) DueAlertDeliveries(ctx context.Context, now time.Time, limit int) ([]models.AlertDelivery, error) {
	var out []models.AlertDelivery
	err := s.with(ctx).Where("state = ? AND next_attempt_at <= ?", models.DeliveryPending, now.UTC()).
		Order("next_attempt_at, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("due notifications: %w", err)
	}
	return out, nil
}

// UpdateAlertDelivery records the outcome of an attempt on d.
func (s *Store) UpdateAlertDelivery(ctx context.Context, d *models.AlertDelivery) error {
	err := s.with(ctx).Model(&models.AlertDelivery{}).Where("id = ?", d.ID).Updates(map[string]any{
		"state": d.State, "attempts": d.Attempts, "next_attempt_at": d.NextAttemptAt, "last_error": d.LastError, "sent_at": d.SentAt,
	}).Error
	if err != nil {
		return fmt.Errorf("update notification %d: %w", d.ID, err)
	}
	return nil
}

// DeliveriesOfAlert returns the notifications of an alert by id.
func (s *Store) DeliveriesOfAlert(ctx context.Context, alertID int64) ([]models.AlertDelivery, error) {
	var out []models.AlertDelivery
	if err := s.with(ctx).Where("alert_id = ?", alertID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("notifications of alert %d: %w", alertID, err)
	}
	return out, nil
}
