package governance

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// maxSilence bounds a silence: longer is a rule to disable, not an alert to silence.
const maxSilence = 90 * 24 * time.Hour

// Alerts returns alerts matching f, newest first.
func (s *Service) Alerts(ctx context.Context, f store.AlertFilter) ([]models.Alert, error) {
	return s.store.Alerts(ctx, f)
}

// AlertByID returns alert id with its notifications.
func (s *Service) AlertByID(ctx context.Context, id int64) (*models.Alert, []models.AlertDelivery, error) {
	a, err := s.store.AlertByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	ds, err := s.store.DeliveriesOfAlert(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return a, ds, nil
}

// Acknowledge records that userID has seen alert id and is on it.
func (s *Service) Acknowledge(ctx context.Context, id, userID int64, now time.Time) (*models.Alert, error) {
	return s.change(ctx, id, "alert.acknowledged", func(a *models.Alert) error {
		if a.State == StateResolved {
			return models.Invalid("alert", "alert #%d is resolved", id)
		}
		t := now.UTC()
		a.State, a.AckedByID, a.AckedAt = StateAcknowledged, &userID, &t
		return nil
	})
}

// Silence mutes alert id until until: later alerts of its rule about the same subject
// are recorded as silenced, without notification or action, until then.
func (s *Service) Silence(ctx context.Context, id int64, until, now time.Time) (*models.Alert, error) {
	until = until.UTC()
	switch {
	case !until.After(now):
		return nil, models.Invalid("until", "%s is not in the future", until.Format(time.RFC3339))
	case until.Sub(now) > maxSilence:
		return nil, models.Invalid("until", "a silence lasts at most 90 days; disable the rule instead")
	}
	return s.change(ctx, id, "alert.silenced", func(a *models.Alert) error {
		a.State, a.SilencedUntil = StateSilenced, &until
		return nil
	})
}

// Resolve closes alert id.
func (s *Service) Resolve(ctx context.Context, id int64, now time.Time) (*models.Alert, error) {
	return s.change(ctx, id, "alert.resolved", func(a *models.Alert) error {
		t := now.UTC()
		a.State, a.ResolvedAt = StateResolved, &t
		return nil
	})
}

// change applies fn to alert id and audits it, atomically.
func (s *Service) change(ctx context.Context, id int64, action string, fn func(*models.Alert) error) (*models.Alert, error) {
	var out *models.Alert
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		a, err := tx.AlertByID(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
		if err := tx.UpdateAlert(ctx, a); err != nil {
			return err
		}
		out = a
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "alert", ObjectID: fmt.Sprint(id),
			Detail: map[string]any{"state": a.State, "silenced_until": a.SilencedUntil}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
