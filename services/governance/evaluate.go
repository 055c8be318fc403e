package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Alert states.
const (
	StateFiring       = "firing"
	StateAcknowledged = "acknowledged"
	StateSilenced     = "silenced"
	StateResolved     = "resolved"
)

// EvalReport says what one evaluation did.
type EvalReport struct {
	// Raised are the alerts this call raised; silenced ones are among them, in state
	// silenced, with no notification and no action.
	Raised []models.Alert
	// Problems are rules that could not be evaluated and actions that failed; the
	// other rules were evaluated all the same.
	Problems []string
}

// Evaluate runs every enabled rule at now and raises an alert for each new finding.
func (s *Service) Evaluate(ctx context.Context, now time.Time) (EvalReport, error) {
	now = now.UTC()
	rules, err := s.store.AlertRules(ctx)
	if err != nil {
		return EvalReport{}, fmt.Errorf("evaluate rules: %w", err)
	}
	var rep EvalReport
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		findings, err := s.find(ctx, r, now)
		if err != nil {
			s.log.Warn("rule not evaluated", "rule", r.Name, "err", err)
			rep.Problems = append(rep.Problems, fmt.Sprintf("rule %s: %v", r.Name, err))
			continue
		}
		for _, f := range findings {
			a, raised, err := s.raise(ctx, r, f, now)
			if err != nil {
				return rep, err
			}
			if !raised {
				continue
			}
			if a.State == StateFiring && r.Action != ActionNotify {
				if problem := s.act(ctx, r, a, f, now); problem != "" {
					rep.Problems = append(rep.Problems, problem)
				}
			}
			rep.Raised = append(rep.Raised, *a)
		}
	}
	return rep, nil
}

// EvaluateNow is Evaluate asked for by a person (the rules page's "evaluate now"),
// audited as done by the actor of ctx with what it raised; the leader's periodic
// rounds are not audited themselves, only the alerts and actions they cause.
func (s *Service) EvaluateNow(ctx context.Context, now time.Time) (EvalReport, error) {
	rep, err := s.Evaluate(ctx, now)
	if err != nil {
		return rep, err
	}
	raised := make([]int64, len(rep.Raised))
	for i, a := range rep.Raised {
		raised[i] = a.ID
	}
	err = s.audit.Append(ctx, audit.Entry{Action: "alert_rules.evaluated", ObjectType: "alert_rule", ObjectID: "all",
		Detail: map[string]any{"raised": raised, "problems": rep.Problems}})
	if err != nil {
		return rep, fmt.Errorf("evaluate rules: %w", err)
	}
	return rep, nil
}

// raise stores the alert of f unless its fingerprint exists, with its notifications
// queued (unless the rule is silenced for this subject) and an audit event, atomically.
func (s *Service) raise(ctx context.Context, r models.AlertRule, f finding, now time.Time) (*models.Alert, bool, error) {
	f.evidence["summary"] = f.summary
	ev, err := json.Marshal(f.evidence)
	if err != nil {
		return nil, false, fmt.Errorf("encode evidence of rule %s: %w", r.Name, err)
	}
	a := &models.Alert{RuleID: r.ID, Scope: f.scope, ScopeID: f.scopeID, State: StateFiring,
		Fingerprint: f.fingerprint(r), Evidence: string(ev), FiredAt: now}
	until, silenced, err := s.store.SilencedUntil(ctx, r.ID, f.scope, f.scopeID, now)
	if err != nil {
		return nil, false, err
	}
	if silenced {
		a.State, a.SilencedUntil = StateSilenced, &until
	}
	var created bool
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if created, err = tx.CreateAlertOnce(ctx, a); err != nil || !created {
			return err
		}
		if !silenced {
			if err := s.queue(ctx, tx, r, a, now); err != nil {
				return err
			}
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "alert.raised", ObjectType: "alert", ObjectID: fmt.Sprint(a.ID),
			Detail: map[string]any{"rule": r.Name, "fingerprint": a.Fingerprint, "state": a.State, "evidence": json.RawMessage(ev)}})
	})
	if err != nil {
		return nil, false, fmt.Errorf("raise alert of rule %s: %w", r.Name, err)
	}
	return a, created, nil
}

// queue adds a notification of a for each enabled channel of r, due at once.
func (s *Service) queue(ctx context.Context, tx *store.Store, r models.AlertRule, a *models.Alert, now time.Time) error {
	wanted := ruleChannels(r)
	if len(wanted) == 0 {
		return nil
	}
	channels, err := tx.NotificationChannels(ctx)
	if err != nil {
		return err
	}
	var ds []models.AlertDelivery
	for _, c := range channels {
		for _, id := range wanted {
			if c.ID == id && c.Enabled {
				ds = append(ds, models.AlertDelivery{AlertID: a.ID, ChannelID: c.ID,
					Delivery: models.Delivery{State: models.DeliveryPending, NextAttemptAt: now}})
			}
		}
	}
	return tx.CreateAlertDeliveries(ctx, ds)
}
