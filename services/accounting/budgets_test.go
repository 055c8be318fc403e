package accounting_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func mar(day, hour int) time.Time { return time.Date(2026, 3, day, hour, 0, 0, 0, time.UTC) }

// budgetHistory: A100s at 1.00 an hour since 1 March; vision holds one all month, speech
// (audio) holds the other from 9 March. Vision's budget is 500.00, speech's 150.00.
func budgetHistory(t *testing.T, s *store.Store) (*world, *models.Budget, *models.Budget) {
	w := newWorld(t, s)
	w.rate(models.CostRate{Resource: "gpu", RateMicros: 1_000_000, EffectiveFrom: mar(1, 0)})
	n := &models.Node{Name: "a100", State: models.NodeReady, CreatedAt: mar(1, 0)}
	must(t, s.CreateNode(w.ctx, n, []models.GPUDevice{{Index: 0, UUID: "g0", Model: "A100-80GB"}, {Index: 1, UUID: "g1", Model: "A100-80GB"}}))
	w.nodes["a100"] = n
	w.alloc(w.job("long", "ada", "detect", ""), "a100", `[{"uuid":"g0"}]`, 0, 0, 0, mar(1, 0), nil)
	w.alloc(w.job("late", "bob", "speech", ""), "a100", `[{"uuid":"g1"}]`, 0, 0, 0, mar(9, 0), nil)
	vision, err := w.acc.CreateBudget(w.ctx, accounting.BudgetInput{TeamID: &w.teams["vision"].ID, AmountMicros: 500_000_000})
	must(t, err)
	speech, err := w.acc.CreateBudget(w.ctx, accounting.BudgetInput{ProjectID: &w.projects["speech"].ID, AmountMicros: 150_000_000, Thresholds: []int{100, 90}})
	must(t, err)
	return w, vision, speech
}

func TestBudgetSpendBurnAndForecast(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w, vision, speech := budgetHistory(t, s)
		week := 7 * 24 * time.Hour
		status := func(b *models.Budget, now time.Time) accounting.BudgetStatus {
			t.Helper()
			w.meter(now)
			all, err := w.acc.BudgetStatuses(w.ctx, now, week)
			must(t, err)
			for _, st := range all {
				if st.Budget.ID == b.ID {
					return st
				}
			}
			t.Fatalf("no status of budget %d in %+v", b.ID, all)
			return accounting.BudgetStatus{}
		}
		// 11 March 09:00: vision spent 249.00 (10 days and 9 hours), one hour short of 50%.
		// Burn over 4-10 March: 24.00 a day; 20 days 15 hours remain: forecast 249 + 495 = 744.
		st := status(vision, mar(11, 9))
		if st.Spent != 249_000_000 || st.Burn != 24_000_000 || st.Forecast != 744_000_000 || len(st.Crossed) != 0 {
			t.Errorf("vision at 09:00 = spent %d, burn %d, forecast %d, crossed %v; want 249000000, 24000000, 744000000, none",
				st.Spent, st.Burn, st.Forecast, st.Crossed)
		}
		// 10:00: exactly 250.00, the 50% threshold.
		st = status(vision, mar(11, 10))
		if st.Spent != 250_000_000 || !slices.Equal(st.Crossed, []int{50}) || st.SpentPercent() != 50 {
			t.Errorf("vision at 10:00 = spent %d, crossed %v; want 250000000 and [50]", st.Spent, st.Crossed)
		}
		// Speech ran 9 and 10 March and 10 hours today: 58.00. Burn 48.00 over seven days;
		// forecast 58 + 48 x (20 days 14 hours) / 7 days = 58 + 141.142857 = 199.142857, 133%.
		st = status(speech, mar(11, 10))
		if st.Spent != 58_000_000 || st.Burn != 6_857_142 || st.Forecast != 199_142_857 || len(st.Crossed) != 0 {
			t.Errorf("speech = spent %d, burn %d, forecast %d, crossed %v", st.Spent, st.Burn, st.Forecast, st.Crossed)
		}
		if !slices.Equal(st.Thresholds, []int{90, 100}) || st.ForecastPercent() < 132 || st.ForecastPercent() > 133 {
			t.Errorf("speech thresholds %v, forecast %.1f%%; want [90 100] and 132.8%%", st.Thresholds, st.ForecastPercent())
		}
		all, err := w.acc.BudgetStatuses(w.ctx, mar(11, 10), week)
		must(t, err)
		if len(all) != 2 || all[0].Budget.ID != vision.ID || all[1].Budget.ID != speech.ID {
			t.Errorf("statuses = %+v", all)
		}
	})
}

func TestBudgetsRefuseBadInput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		team, project, nobody := &w.teams["vision"].ID, &w.projects["detect"].ID, ptr(int64(999))
		w.ctx = audit.WithActor(w.ctx, audit.Actor{Name: "ada", Type: models.ActorUser})
		_, err := w.acc.CreateBudget(w.ctx, accounting.BudgetInput{TeamID: team, AmountMicros: 1})
		must(t, err)
		cases := []struct {
			in    accounting.BudgetInput
			field string
		}{
			{accounting.BudgetInput{TeamID: team, ProjectID: project, AmountMicros: 1}, "team_id"},
			{accounting.BudgetInput{AmountMicros: 1}, "team_id"},
			{accounting.BudgetInput{TeamID: team, AmountMicros: 1}, "team_id"}, // it has one
			{accounting.BudgetInput{TeamID: nobody, AmountMicros: 1}, "team_id"},
			{accounting.BudgetInput{ProjectID: nobody, AmountMicros: 1}, "project_id"},
			{accounting.BudgetInput{ProjectID: project, AmountMicros: 0}, "amount_micros"},
			{accounting.BudgetInput{ProjectID: project, AmountMicros: 2_000_000_000_000_000}, "amount_micros"},
			{accounting.BudgetInput{ProjectID: project, AmountMicros: 1, Thresholds: []int{}}, "thresholds"},
			{accounting.BudgetInput{ProjectID: project, AmountMicros: 1, Thresholds: []int{0}}, "thresholds"},
			{accounting.BudgetInput{ProjectID: project, AmountMicros: 1, Thresholds: []int{80, 80}}, "thresholds"},
		}
		for _, c := range cases {
			_, err := w.acc.CreateBudget(w.ctx, c.in)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%+v: %v, want a %s error", c.in, err, c.field)
			}
		}
		b, err := w.acc.CreateBudget(w.ctx, accounting.BudgetInput{ProjectID: project, AmountMicros: 5})
		must(t, err)
		b, err = w.acc.UpdateBudget(w.ctx, b.ID, accounting.BudgetInput{AmountMicros: 7, Thresholds: []int{75}})
		must(t, err)
		if got, _ := s.BudgetByID(w.ctx, b.ID); got.AmountMicros != 7 || got.Thresholds != "[75]" {
			t.Errorf("updated budget = %+v", got)
		}
		must(t, w.acc.DeleteBudget(w.ctx, b.ID))
		if err := w.acc.DeleteBudget(w.ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
		// Only what was done is audited, by the actor of the context.
		if got := w.audited("budget."); got != "budget.created:ada budget.created:ada budget.updated:ada budget.deleted:ada" {
			t.Errorf("audited %q", got)
		}
	})
}

func ptr[T any](v T) *T { return &v }
