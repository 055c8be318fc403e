package governance_test

import (
	"errors"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func errAs(err error, fe **models.FieldError, field string) bool {
	return errors.As(err, fe) && (*fe).Field == field
}

// The default rules exist and are valid; bad rules and channels are refused naming
// the field, and nothing is stored.
func TestRulesAndChannelsRefuseBadInput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		defaults, err := e.gov.Rules(e.ctx)
		must(t, err)
		if len(defaults) != 5 {
			t.Fatalf("default rules = %d, want 5", len(defaults))
		}
		for _, r := range defaults {
			if _, err := e.gov.UpdateRule(e.ctx, r.ID, governance.RuleInput{Name: r.Name, Metric: r.Metric, Threshold: r.Threshold,
				WindowSec: r.WindowSec, Action: r.Action, Enabled: r.Enabled}); err != nil {
				t.Errorf("default rule %s is not valid: %v", r.Name, err)
			}
		}
		ok := governance.RuleInput{Name: "r", Metric: "team_cost_ratio", Threshold: 250, WindowSec: 7 * 86400, Action: "notify"}
		bad := func(edit func(*governance.RuleInput)) governance.RuleInput {
			in := ok
			edit(&in)
			return in
		}
		cases := []struct {
			in    governance.RuleInput
			field string
		}{
			{bad(func(in *governance.RuleInput) { in.Metric = "gpu_temperature" }), "metric"},
			{bad(func(in *governance.RuleInput) { in.Name = " " }), "name"},
			{bad(func(in *governance.RuleInput) { in.Name = "team-cost-spike" }), "name"},
			{bad(func(in *governance.RuleInput) { in.Threshold = 100 }), "threshold"},
			{bad(func(in *governance.RuleInput) { in.WindowSec = 0 }), "window_sec"},
			{bad(func(in *governance.RuleInput) { in.WindowSec = 100 * 86400 }), "window_sec"},
			{bad(func(in *governance.RuleInput) { in.WindowSec = 86400 + 1 }), "window_sec"},
			{bad(func(in *governance.RuleInput) { in.Action = "stop" }), "action"},
			{bad(func(in *governance.RuleInput) { in.ChannelIDs = []int64{999} }), "channels"},
			{governance.RuleInput{Name: "j", Metric: "job_idle_minutes", Threshold: 60, WindowSec: 3600, Action: "stop"}, "window_sec"},
			{governance.RuleInput{Name: "j", Metric: "job_idle_minutes", Threshold: 0, Action: "stop"}, "threshold"},
			{governance.RuleInput{Name: "p", Metric: "project_gpu_idle_rate", Threshold: 101, WindowSec: 86400, Action: "notify"}, "threshold"},
			{governance.RuleInput{Name: "b", Metric: "budget_threshold", Threshold: 80, Action: "notify"}, "threshold"},
		}
		for _, c := range cases {
			_, err := e.gov.CreateRule(e.ctx, c.in)
			var fe *models.FieldError
			if !errAs(err, &fe, c.field) {
				t.Errorf("%+v: %v, want a %s error", c.in, err, c.field)
			}
		}
		if rules, _ := e.gov.Rules(e.ctx); len(rules) != 5 {
			t.Errorf("refused rules were stored: %d rules", len(rules))
		}
		if _, err := e.gov.CreateRule(e.ctx, ok); err != nil {
			t.Errorf("a good rule: %v", err)
		}

		for _, c := range []struct {
			in    governance.ChannelInput
			field string
		}{
			{governance.ChannelInput{Name: "x", Kind: "pager", Target: "x"}, "kind"},
			{governance.ChannelInput{Name: "x", Kind: "webhook", Target: "ftp://example.com/x"}, "target"},
			{governance.ChannelInput{Name: "x", Kind: "webhook", Target: "https://"}, "target"},
			{governance.ChannelInput{Name: "x", Kind: "email", Target: "not an address"}, "target"},
			{governance.ChannelInput{Name: "slack", Kind: "webhook", Target: "https://example.com/x"}, "name"},
			{governance.ChannelInput{Name: "", Kind: "email", Target: "a@example.com"}, "name"},
		} {
			_, err := e.gov.CreateChannel(e.ctx, c.in)
			var fe *models.FieldError
			if !errAs(err, &fe, c.field) {
				t.Errorf("%+v: %v, want a %s error", c.in, err, c.field)
			}
		}
	})
}
