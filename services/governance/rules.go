package governance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Metrics rules watch.
const (
	MetricTeamCostRatio   = "team_cost_ratio"
	MetricProjectIdleRate = "project_gpu_idle_rate"
	MetricJobIdleMinutes  = "job_idle_minutes"
	MetricBudgetThreshold = "budget_threshold"
	MetricBudgetForecast  = "budget_forecast"
)

// Actions a rule can take besides notifying.
const (
	ActionNotify        = "notify"
	ActionHold          = "hold"
	ActionLowerPriority = "lower-priority"
	ActionStop          = "stop"
	// ActionRelease gives an idle job's GPUs back to the pool: checkpoint, stop, requeue.
	ActionRelease = "release"
)

// Scopes of alerts: what a rule's subject is.
const (
	ScopeTeam    = "team"
	ScopeProject = "project"
	ScopeJob     = "job"
	ScopeBudget  = "budget"
)

// Metric says what a rule on it watches and what its threshold and window mean.
type Metric struct {
	Name      string
	Scope     string
	Threshold string // what the threshold is, for forms and messages
	Window    string // what the window is; empty when the metric takes none (0)
	min, max  float64
	// windowMin and windowMax bound the window; whole days when days is set.
	windowMin, windowMax time.Duration
	days                 bool
	Actions              []string
}

// Metrics is the catalogue of what rules can watch.
var Metrics = []Metric{
	{Name: MetricTeamCostRatio, Scope: ScopeTeam, Threshold: "percent of the team's mean daily cost that today's cost must pass (more than 100)",
		Window: "days before today the mean is taken over", min: 100.000001, max: 100_000, windowMin: 24 * time.Hour, windowMax: 90 * 24 * time.Hour, days: true,
		Actions: []string{ActionNotify, ActionHold, ActionLowerPriority}},
	{Name: MetricProjectIdleRate, Scope: ScopeProject, Threshold: "percent of the project's GPU time spent idle that must be passed",
		Window: "how far back GPU time is counted", min: 0.000001, max: 100, windowMin: time.Hour, windowMax: 31 * 24 * time.Hour,
		Actions: []string{ActionNotify, ActionHold, ActionLowerPriority}},
	{Name: MetricJobIdleMinutes, Scope: ScopeJob, Threshold: "minutes a running job's GPUs must have been idle",
		min: 1, max: 7 * 24 * 60, Actions: []string{ActionNotify, ActionLowerPriority, ActionStop, ActionRelease}},
	{Name: MetricBudgetThreshold, Scope: ScopeBudget, Threshold: "0: each budget's own thresholds (50/80/100% by default) apply",
		Actions: []string{ActionNotify, ActionHold, ActionLowerPriority}},
	{Name: MetricBudgetForecast, Scope: ScopeBudget, Threshold: "percent of the budget that the month-end forecast must pass",
		Window: "days of spend the burn rate is taken over", min: 1, max: 1000, windowMin: 24 * time.Hour, windowMax: 31 * 24 * time.Hour, days: true,
		Actions: []string{ActionNotify, ActionHold, ActionLowerPriority}},
}

// MetricByName returns the metric called name.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// RuleInput is a rule as an admin writes it.
type RuleInput struct {
	Name       string
	Metric     string
	Threshold  float64
	WindowSec  int64
	Action     string
	DryRun     bool
	Enabled    bool
	ChannelIDs []int64
}

// validate checks in against its metric and the channels that exist.
func (s *Service) validate(ctx context.Context, in RuleInput) (Metric, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return Metric{}, models.Invalid("name", "give a name of 1 to 100 characters")
	}
	m, ok := MetricByName(in.Metric)
	if !ok {
		names := make([]string, len(Metrics))
		for i, m := range Metrics {
			names[i] = m.Name
		}
		return Metric{}, models.Invalid("metric", "%q is not a metric rules can watch (%s)", in.Metric, strings.Join(names, ", "))
	}
	if m.max == 0 && in.Threshold != 0 {
		return Metric{}, models.Invalid("threshold", "must be 0 for %s: %s", m.Name, m.Threshold)
	}
	if m.max > 0 && (in.Threshold < m.min || in.Threshold > m.max) {
		return Metric{}, models.Invalid("threshold", "%g is outside %g-%g for %s: the %s", in.Threshold, m.min, m.max, m.Name, m.Threshold)
	}
	window := time.Duration(in.WindowSec) * time.Second
	switch {
	case m.Window == "" && in.WindowSec != 0:
		return Metric{}, models.Invalid("window_sec", "must be 0 for %s, which takes no window", m.Name)
	case m.Window != "" && (window < m.windowMin || window > m.windowMax):
		return Metric{}, models.Invalid("window_sec", "%d s is impossible for %s: the %s is %s to %s", in.WindowSec, m.Name, m.Window, m.windowMin, m.windowMax)
	case m.days && window%(24*time.Hour) != 0:
		return Metric{}, models.Invalid("window_sec", "%d s is not whole days; the %s counts days", in.WindowSec, m.Window)
	}
	if !slices.Contains(m.Actions, in.Action) {
		return Metric{}, models.Invalid("action", "%q is not an action of %s rules (%s)", in.Action, m.Name, strings.Join(m.Actions, ", "))
	}
	channels, err := s.store.NotificationChannels(ctx)
	if err != nil {
		return Metric{}, err
	}
	for _, id := range in.ChannelIDs {
		if !slices.ContainsFunc(channels, func(c models.NotificationChannel) bool { return c.ID == id }) {
			return Metric{}, models.Invalid("channels", "there is no channel %d", id)
		}
	}
	return m, nil
}

func (in RuleInput) apply(r *models.AlertRule, m Metric) error {
	ids := in.ChannelIDs
	if ids == nil {
		ids = []int64{}
	}
	raw, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("encode channels: %w", err)
	}
	r.Name, r.Metric, r.Scope, r.Threshold, r.WindowSec = strings.TrimSpace(in.Name), in.Metric, m.Scope, in.Threshold, in.WindowSec
	r.Action, r.DryRun, r.Enabled, r.Channels = in.Action, in.DryRun, in.Enabled, string(raw)
	return nil
}

// CreateRule validates and adds a rule, audited.
func (s *Service) CreateRule(ctx context.Context, in RuleInput) (*models.AlertRule, error) {
	m, err := s.validate(ctx, in)
	if err != nil {
		return nil, err
	}
	r := &models.AlertRule{}
	if err := in.apply(r, m); err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateAlertRule(ctx, r); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "alert_rule.created", ObjectType: "alert_rule", ObjectID: fmt.Sprint(r.ID), Detail: r})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("name", "a rule called %q exists already", r.Name)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// UpdateRule validates and replaces rule id, audited with the before and after.
func (s *Service) UpdateRule(ctx context.Context, id int64, in RuleInput) (*models.AlertRule, error) {
	m, err := s.validate(ctx, in)
	if err != nil {
		return nil, err
	}
	r, err := s.store.AlertRuleByID(ctx, id)
	if err != nil {
		return nil, err
	}
	before := *r
	if err := in.apply(r, m); err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UpdateAlertRule(ctx, r); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "alert_rule.updated", ObjectType: "alert_rule", ObjectID: fmt.Sprint(r.ID),
			Detail: map[string]any{"before": before, "after": r}})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("name", "a rule called %q exists already", r.Name)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Rules returns every rule by name.
func (s *Service) Rules(ctx context.Context) ([]models.AlertRule, error) {
	return s.store.AlertRules(ctx)
}

// ruleChannels reads the channel ids of a rule.
func ruleChannels(r models.AlertRule) []int64 {
	var ids []int64
	if r.Channels != "" {
		if err := json.Unmarshal([]byte(r.Channels), &ids); err != nil {
			return nil
		}
	}
	return ids
}
