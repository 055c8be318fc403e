package accounting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// DefaultThresholds are the percentages of a budget whose crossing raises an alert.
var DefaultThresholds = []int{50, 80, 100}

// maxBudgetMicros is a billion currency units a month: more is a typo.
const maxBudgetMicros = 1_000_000_000 * MicrosPerUnit

// BudgetInput is a monthly budget of a team or of a project.
type BudgetInput struct {
	TeamID       *int64
	ProjectID    *int64
	AmountMicros int64
	Thresholds   []int // percentages; nil for DefaultThresholds
}

// CreateBudget validates and stores a monthly budget, audited; a team or project has at
// most one.
func (a *Accounting) CreateBudget(ctx context.Context, in BudgetInput) (*models.Budget, error) {
	thresholds, err := validateBudget(&in)
	if err != nil {
		return nil, err
	}
	if (in.TeamID == nil) == (in.ProjectID == nil) {
		return nil, models.Invalid("team_id", "a budget belongs to one team or to one project: give team_id or project_id")
	}
	if err := a.checkOwner(ctx, in); err != nil {
		return nil, err
	}
	b := &models.Budget{TeamID: in.TeamID, ProjectID: in.ProjectID, AmountMicros: in.AmountMicros, Thresholds: thresholds}
	err = a.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateBudget(ctx, b); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "budget.created", ObjectType: "budget", ObjectID: fmt.Sprint(b.ID),
			ProjectID: b.ProjectID, Detail: b})
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			field := "team_id"
			if in.ProjectID != nil {
				field = "project_id"
			}
			return nil, models.Invalid(field, "has a budget already; change that one")
		}
		return nil, err
	}
	return b, nil
}

// UpdateBudget changes the amount and thresholds of budget id (not whose it is),
// audited with the before and after.
func (a *Accounting) UpdateBudget(ctx context.Context, id int64, in BudgetInput) (*models.Budget, error) {
	thresholds, err := validateBudget(&in)
	if err != nil {
		return nil, err
	}
	b, err := a.store.BudgetByID(ctx, id)
	if err != nil {
		return nil, err
	}
	before := *b
	b.AmountMicros, b.Thresholds = in.AmountMicros, thresholds
	err = a.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UpdateBudget(ctx, b); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "budget.updated", ObjectType: "budget", ObjectID: fmt.Sprint(id),
			ProjectID: b.ProjectID, Detail: map[string]any{"before": before, "after": b}})
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// DeleteBudget removes budget id, audited.
func (a *Accounting) DeleteBudget(ctx context.Context, id int64) error {
	return a.store.InTx(ctx, func(tx *store.Store) error {
		b, err := tx.BudgetByID(ctx, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteBudget(ctx, id); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "budget.deleted", ObjectType: "budget", ObjectID: fmt.Sprint(id),
			ProjectID: b.ProjectID, Detail: b})
	})
}

// Budgets returns every budget.
func (a *Accounting) Budgets(ctx context.Context) ([]models.Budget, error) {
	return a.store.Budgets(ctx)
}

// validateBudget checks amount and thresholds and returns the thresholds as stored.
func validateBudget(in *BudgetInput) (string, error) {
	switch {
	case in.AmountMicros <= 0:
		return "", models.Invalid("amount_micros", "%d is not a budget: give more than 0 micro-units a month", in.AmountMicros)
	case in.AmountMicros > maxBudgetMicros:
		return "", models.Invalid("amount_micros", "%s a month is absurd; at most %s", FormatMoney(in.AmountMicros), FormatMoney(maxBudgetMicros))
	}
	ts := in.Thresholds
	if ts == nil {
		ts = DefaultThresholds
	}
	if len(ts) == 0 || len(ts) > 10 {
		return "", models.Invalid("thresholds", "give 1 to 10 percentages, e.g. 50, 80, 100")
	}
	ts = slices.Clone(ts)
	slices.Sort(ts)
	for i, t := range ts {
		if t < 1 || t > 1000 {
			return "", models.Invalid("thresholds", "%d%% is not a threshold: each is 1 to 1000 percent of the budget", t)
		}
		if i > 0 && ts[i-1] == t {
			return "", models.Invalid("thresholds", "%d%% is given twice", t)
		}
	}
	raw, err := json.Marshal(ts)
	if err != nil {
		return "", fmt.Errorf("encode thresholds: %w", err)
	}
	return string(raw), nil
}

func (a *Accounting) checkOwner(ctx context.Context, in BudgetInput) error {
	if in.ProjectID != nil {
		if _, err := a.store.ProjectByID(ctx, *in.ProjectID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return models.Invalid("project_id", "there is no project %d", *in.ProjectID)
			}
			return err
		}
		return nil
	}
	teams, err := a.store.Teams(ctx)
	if err != nil {
		return err
	}
	for _, t := range teams {
		if t.ID == *in.TeamID {
			return nil
		}
	}
	return models.Invalid("team_id", "there is no team %d", *in.TeamID)
}

// Thresholds returns the percentages of b, ascending.
func Thresholds(b models.Budget) []int {
	var ts []int
	if err := json.Unmarshal([]byte(b.Thresholds), &ts); err != nil || len(ts) == 0 {
		return DefaultThresholds
	}
	slices.Sort(ts)
	return ts
}

// BudgetStatus is where a budget stands in the month of now.
type BudgetStatus struct {
	Budget     models.Budget
	Thresholds []int
	Month      time.Time // the first day of the month, UTC
	Spent      int64     // micro-units this month so far
	// Burn is the mean daily spend over the whole days of the burn window before today.
	Burn int64
	// Forecast is Spent plus the burn rate over the rest of the month.
	Forecast int64
	// Crossed lists the thresholds that Spent has reached.
	Crossed []int
}

// SpentPercent and ForecastPercent relate the spend to the budget.
func (s BudgetStatus) SpentPercent() float64 {
	return 100 * float64(s.Spent) / float64(s.Budget.AmountMicros)
}

// ForecastPercent is the forecast as a percentage of the budget.
func (s BudgetStatus) ForecastPercent() float64 {
	return 100 * float64(s.Forecast) / float64(s.Budget.AmountMicros)
}

// budgetSpends is what each team and each project was charged in one period.
type budgetSpends struct{ team, project map[int64]int64 }

func (sp budgetSpends) of(b models.Budget) int64 {
	switch {
	case b.TeamID != nil:
		return sp.team[*b.TeamID]
	case b.ProjectID != nil:
		return sp.project[*b.ProjectID]
	}
	return 0
}

// spends sums the charges of [from, to) by team and by project: two grouped queries,
// whatever the number of budgets.
func (a *Accounting) spends(ctx context.Context, from, to time.Time) (budgetSpends, error) {
	sp := budgetSpends{team: map[int64]int64{}, project: map[int64]int64{}}
	for by, into := range map[string]map[int64]int64{store.ByTeam: sp.team, store.ByProject: sp.project} {
		rows, err := a.store.CostRollup(ctx, store.RollupQuery{By: by, From: from, To: to, ChargedOnly: true})
		if err != nil {
			return sp, fmt.Errorf("spend by %s from %s: %w", by, from.Format(time.DateOnly), err)
		}
		for _, r := range rows {
			into[r.Key] += r.AmountMicros
		}
	}
	return sp, nil
}

// BudgetStatuses works out every budget's spend, burn rate and month-end forecast at
// now, taking the burn rate over the whole days of burnWindow before today. The spend of
// all budgets comes from four grouped queries, not two per budget.
func (a *Accounting) BudgetStatuses(ctx context.Context, now time.Time, burnWindow time.Duration) ([]BudgetStatus, error) {
	budgets, err := a.store.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	next := month.AddDate(0, 1, 0)
	today := now.Truncate(24 * time.Hour)
	days := max(1, int(burnWindow/(24*time.Hour)))
	spent, err := a.spends(ctx, month, next)
	if err != nil {
		return nil, err
	}
	burned, err := a.spends(ctx, today.AddDate(0, 0, -days), today)
	if err != nil {
		return nil, err
	}
	remaining := int64(next.Sub(now) / time.Second)
	out := make([]BudgetStatus, 0, len(budgets))
	for _, b := range budgets {
		st := BudgetStatus{Budget: b, Thresholds: Thresholds(b), Month: month, Spent: spent.of(b)}
		window := burned.of(b)
		st.Burn = window / int64(days)
		st.Forecast = st.Spent + mulDiv(window, remaining, 1, int64(days)*86_400)
		for _, t := range st.Thresholds {
			if st.Spent*100 >= int64(t)*b.AmountMicros {
				st.Crossed = append(st.Crossed, t)
			}
		}
		out = append(out, st)
	}
	return out, nil
}
