package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// CreateAlertOnce inserts a unless an alert with its fingerprint exists; created says
// which. It is how the same alert is never raised (nor sent) twice, across replicas too.
func (s *Store) CreateAlertOnce(ctx context.Context, a *models.Alert) (created bool, err error) {
	res := s.with(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "fingerprint"}}, DoNothing: true}).Create(a)
	if err := translate(res.Error); err != nil {
		return false, fmt.Errorf("raise alert %s: %w", a.Fingerprint, err)
	}
	return res.RowsAffected == 1, nil
}

// AlertByID returns alert id.
func (s *Store) AlertByID(ctx context.Context, id int64) (*models.Alert, error) {
	var a models.Alert
	if err := translate(s.with(ctx).First(&a, id).Error); err != nil {
		return nil, fmt.Errorf("alert %d: %w", id, err)
	}
	return &a, nil
}

// AlertFilter selects alerts, newest first; zero fields select everything.
type AlertFilter struct {
	States   []string
	RuleID   int64
	Scope    string
	ScopeIDs []int64
	BeforeID int64
	Limit    int // default 50
}

// Alerts returns the alerts matching f, newest first.
func (s *Store) Alerts(ctx context.Context, f AlertFilter) ([]models.Alert, error) {
	q := s.with(ctx).Model(&models.Alert{})
	if len(f.States) > 0 {
		q = q.Where("state IN ?", f.States)
	}
	if f.RuleID != 0 {
		q = q.Where("rule_id = ?", f.RuleID)
	}
	if f.Scope != "" {
		q = q.Where("scope = ?", f.Scope)
	}
	if len(f.ScopeIDs) > 0 {
		q = q.Where("scope_id IN ?", f.ScopeIDs)
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []models.Alert
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return out, nil
}

// SilencedUntil returns the latest silence set on alerts of a rule and scope, if any
// reaches past now.
func (s *Store) SilencedUntil(ctx context.Context, ruleID int64, scope string, scopeID int64, now time.Time) (time.Time, bool, error) {
	var a models.Alert
	err := translate(s.with(ctx).Where("rule_id = ? AND scope = ? AND scope_id = ? AND silenced_until > ?", ruleID, scope, scopeID, now.UTC()).
		Order("silenced_until DESC").First(&a).Error)
	switch {
	case isNotFound(err):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("silence of rule %d on %s %d: %w", ruleID, scope, scopeID, err)
	}
	return a.SilencedUntil.UTC(), true, nil
}

// UpdateAlert writes the state, acknowledgement, silence, resolution and action of a.
func (s *Store) UpdateAlert(ctx context.Context, a *models.Alert) error {
	res := s.with(ctx).Model(&models.Alert{}).Where("id = ?", a.ID).Updates(map[string]any{
		"state": a.State, "action_taken": a.ActionTaken, "acked_by_id": a.AckedByID, "acked_at": a.AckedAt,
		"silenced_until": a.SilencedUntil, "resolved_at": a.ResolvedAt,
	})
	if res.Error != nil {
		return fmt.Errorf("update alert %d: %w", a.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("update alert %d: %w", a.ID, ErrNotFound)
	}
	return nil
}
