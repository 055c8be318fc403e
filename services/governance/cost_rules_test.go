package governance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var tue = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC) // a Tuesday

// Team cost today against its 7-day daily mean: exactly 200% does not fire, 210% does,
// once, with the numbers and the window; the webhook and the e-mail carry them.
func TestTeamCostSpikeFiresOnceAboveThreshold(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400,
			Action: "notify", Enabled: true, ChannelIDs: []int64{e.channels["slack"], e.channels["finops"]}})
		for d := 1; d <= 7; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d)) // vision: 10.00 a day
			e.spend("speech", 5, tue.AddDate(0, 0, -d))  // audio: 5.00 a day
		}
		e.spend("detect", 20, tue.Add(-3*time.Hour)) // 200%: on the threshold, not over it
		e.spend("speech", 10, tue.Add(-3*time.Hour)) // 200%
		if rep := e.evaluate(tue); len(rep.Raised) != 0 {
			t.Fatalf("at exactly 200%% raised %+v", rep.Raised)
		}
		e.spend("detect", 1, tue.Add(-2*time.Hour)) // 21.00: 210%
		rep := e.evaluate(tue)
		if len(rep.Raised) != 1 {
			t.Fatalf("raised %d alerts, want 1 for vision", len(rep.Raised))
		}
		a := rep.Raised[0]
		ev := evidence(t, a)
		want := map[string]any{"team": "vision", "today_micros": 21e6, "mean_daily_micros": 10e6, "ratio_pct": 210.0,
			"threshold_pct": 200.0, "window_from": "2026-03-03", "window_to": "2026-03-10", "window_days": 7.0, "day": "2026-03-10"}
		for k, v := range want {
			if ev[k] != v {
				t.Errorf("evidence %s = %v, want %v", k, ev[k], v)
			}
		}
		if a.Scope != "team" || a.ScopeID != e.teams["vision"].ID || a.State != "firing" {
			t.Errorf("alert = %+v", a)
		}
		if again := e.evaluate(tue.Add(time.Hour)); len(again.Raised) != 0 {
			t.Errorf("the same spike raised again: %+v", again.Raised)
		}

		if rep := e.deliver(tue); rep.Sent != 2 || rep.Retrying != 0 {
			t.Fatalf("deliver = %+v, want 2 sent", rep)
		}
		if rep := e.deliver(tue.Add(time.Hour)); rep.Sent != 0 {
			t.Errorf("second delivery sent %d again", rep.Sent)
		}
		hooks := e.hook.received()
		if len(hooks) != 1 {
			t.Fatalf("webhook got %d posts, want 1", len(hooks))
		}
		summary := "team vision spent 21.00 USD today, 210% of its mean daily cost of 10.00 USD over the 7 days before (threshold 200%)"
		text, _ := hooks[0]["text"].(string)
		if !strings.Contains(text, summary) || !strings.Contains(text, "https://gantry.example/alerts/") {
			t.Errorf("webhook text = %q", text)
		}
		body, _ := hooks[0]["alert"].(map[string]any)
		hookEv, _ := body["evidence"].(map[string]any)
		if body["rule"] != "team-cost-spike" || body["metric"] != "team_cost_ratio" || hookEv["today_micros"] != 21e6 || hookEv["mean_daily_micros"] != 10e6 {
			t.Errorf("webhook alert = %v", body)
		}
		mails := e.mail.Received()
		if len(mails) != 1 || mails[0].From != "gantry@example.com" || len(mails[0].To) != 1 || mails[0].To[0] != "finops@example.com" {
			t.Fatalf("mails = %+v", mails)
		}
		for _, part := range []string{"Subject: [Gantry] team-cost-spike: " + summary, "ratio_pct: 210", "window_from: 2026-03-03", "\r\n\r\n" + summary} {
			if !strings.Contains(mails[0].Data, part) {
				t.Errorf("e-mail lacks %q:\n%s", part, mails[0].Data)
			}
		}
	})
}

// Budget thresholds fire on reaching 50% (not at 49.99%), then 80%, each once; the
// forecast fires only above its threshold.
func TestBudgetThresholdAndForecast(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		e.disable("team-cost-spike")
		_, err := e.acc.CreateBudget(e.ctx, accounting.BudgetInput{TeamID: &e.teams["vision"].ID, AmountMicros: 100_000_000})
		must(t, err)
		e.rule(governance.RuleInput{Name: "budget-forecast", Metric: "budget_forecast", Threshold: 201.5, WindowSec: 7 * 86400, Action: "notify", Enabled: true})
		for d := 1; d <= 4; d++ {
			e.spend("detect", 10, time.Date(2026, 3, d, 8, 0, 0, 0, time.UTC))
		}
		now := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
		e.spend("detect", 9, now.Add(-4*time.Hour))
		_, err = e.acc.RecordUsage(e.ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: e.projects["detect"].ID,
			Bytes: 99 << 30 / 100, From: now.Add(-3 * time.Hour), To: now.Add(-2 * time.Hour)}) // 0.99: 49.99 in all
		must(t, err)
		if rep := e.evaluate(now); len(rep.Raised) != 0 {
			t.Fatalf("at 49.99%% raised %+v", rep.Raised)
		}
		_, err = e.acc.RecordUsage(e.ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: e.projects["detect"].ID,
			Bytes: 1 << 30 / 100, From: now.Add(-2 * time.Hour), To: now.Add(-time.Hour)}) // 0.01: 50.00
		must(t, err)
		rep := e.evaluate(now)
		if len(rep.Raised) != 1 {
			t.Fatalf("at 50%% raised %d alerts, want the 50%% threshold only (forecast 201.43%% < 201.5%%)", len(rep.Raised))
		}
		ev := evidence(t, rep.Raised[0])
		if ev["threshold_pct"] != 50.0 || ev["spent_micros"] != 50e6 || ev["owner"] != "team vision" || ev["month"] != "2026-03" {
			t.Errorf("50%% evidence = %v", ev)
		}
		if again := e.evaluate(now); len(again.Raised) != 0 {
			t.Errorf("50%% raised twice")
		}
		// Forecast: 50.00 spent; burn 40.00 over the 7 days before today; 26.5 days left:
		// 50 + 40 x 26.5 / 7 = 201.428571, 201.43% of the budget.
		e.rule(governance.RuleInput{Name: "budget-forecast", Metric: "budget_forecast", Threshold: 201.4, WindowSec: 7 * 86400, Action: "notify", Enabled: true})
		rep = e.evaluate(now)
		if len(rep.Raised) != 1 {
			t.Fatalf("forecast over 201.4%% raised %d alerts, want 1", len(rep.Raised))
		}
		ev = evidence(t, rep.Raised[0])
		if ev["forecast_micros"] != 201_428_571.0 || ev["forecast_pct"] != 201.4 || ev["burn_micros_per_day"] != 5_714_285.0 || ev["burn_window_days"] != 7.0 {
			t.Errorf("forecast evidence = %v", ev)
		}
		e.spend("detect", 30, now.Add(-30*time.Minute)) // 80.00
		rep = e.evaluate(now)
		if len(rep.Raised) != 1 || evidence(t, rep.Raised[0])["threshold_pct"] != 80.0 {
			t.Fatalf("at 80%% raised %+v, want the 80%% threshold", rep.Raised)
		}
	})
}
