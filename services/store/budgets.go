package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateBudget inserts b. A team or project has at most one budget: a second is ErrConflict.
func (s *Store) CreateBudget(ctx context.Context, b *models.Budget) error {
	err := s.InTx(ctx, func(tx *Store) error {
		q := tx.with(ctx).Model(&models.Budget{})
		q = whereOptional(q, "team_id", b.TeamID)
		q = whereOptional(q, "project_id", b.ProjectID)
		var n int64
		if err := q.Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: it has a budget already", ErrConflict)
		}
		return translate(tx.with(ctx).Create(b).Error)
	})
	if err != nil {
		return fmt.Errorf("create budget: %w", err)
	}
	return nil
}

// UpdateBudget changes the amount and thresholds of budget b.ID.
func (s *Store) UpdateBudget(ctx context.Context, b *models.Budget) error {
	res := s.with(ctx).Model(&models.Budget{}).Where("id = ?", b.ID).
		Updates(map[string]any{"amount_micros": b.AmountMicros, "thresholds": b.Thresholds, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("update budget %d: %w", b.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("update budget %d: %w", b.ID, ErrNotFound)
	}
	return nil
}

// DeleteBudget removes budget id.
func (s *Store) DeleteBudget(ctx context.Context, id int64) error {
	res := s.with(ctx).Delete(&models.Budget{}, id)
	if res.Error != nil {
		return fmt.Errorf("delete budget %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete budget %d: %w", id, ErrNotFound)
	}
	return nil
}

// BudgetByID returns budget id.
func (s *Store) BudgetByID(ctx context.Context, id int64) (*models.Budget, error) {
	var b models.Budget
	if err := translate(s.with(ctx).First(&b, id).Error); err != nil {
		return nil, fmt.Errorf("budget %d: %w", id, err)
	}
	return &b, nil
}

// Budgets returns every budget by id.
func (s *Store) Budgets(ctx context.Context) ([]models.Budget, error) {
	var out []models.Budget
	if err := s.with(ctx).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list budgets: %w", err)
	}
	return out, nil
}
