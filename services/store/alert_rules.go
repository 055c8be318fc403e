package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateAlertRule inserts r; a taken name is ErrConflict.
func (s *Store) CreateAlertRule(ctx context.Context, r *models.AlertRule) error {
	if err := translate(s.with(ctx).Create(r).Error); err != nil {
		return fmt.Errorf("create alert rule %s: %w", r.Name, err)
	}
	return nil
}

// UpdateAlertRule saves every field of r; a taken name is ErrConflict.
func (s *Store) UpdateAlertRule(ctx context.Context, r *models.AlertRule) error {
	r.UpdatedAt = time.Now().UTC()
	res := s.with(ctx).Model(&models.AlertRule{}).Where("id = ?", r.ID).Select("*").Omit("id", "created_at").Updates(r)
	if err := translate(res.Error); err != nil {
		return fmt.Errorf("update alert rule %s: %w", r.Name, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("update alert rule %d: %w", r.ID, ErrNotFound)
	}
	return nil
}

// AlertRuleByID returns rule id.
func (s *Store) AlertRuleByID(ctx context.Context, id int64) (*models.AlertRule, error) {
	var r models.AlertRule
	if err := translate(s.with(ctx).First(&r, id).Error); err != nil {
		return nil, fmt.Errorf("alert rule %d: %w", id, err)
	}
	return &r, nil
}

// AlertRules returns every rule by name.
func (s *Store) AlertRules(ctx context.Context) ([]models.AlertRule, error) {
	var out []models.AlertRule
	if err := s.with(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list alert rules: %w", err)
	}
	return out, nil
}
