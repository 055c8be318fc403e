package governance

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
)

// finding is one subject over a rule's threshold, with what a person needs to judge it.
type finding struct {
	scope    string
	scopeID  int64
	period   string // the day, week, month or attempt: one alert per subject and period
	summary  string
	evidence map[string]any
	// projectIDs are the projects whose queued jobs hold and lower-priority act on;
	// jobID is the job that job-scoped actions act on.
	projectIDs []int64
	jobID      int64
}

func (f finding) fingerprint(r models.AlertRule) string {
	return fmt.Sprintf("rule-%d/%s-%d/%s", r.ID, f.scope, f.scopeID, f.period)
}

// find evaluates one rule at now.
func (s *Service) find(ctx context.Context, r models.AlertRule, now time.Time) ([]finding, error) {
	switch r.Metric {
	case MetricTeamCostRatio:
		return s.teamCostSpikes(ctx, r, now)
	case MetricProjectIdleRate:
		return s.idleProjects(ctx, r, now)
	case MetricJobIdleMinutes:
		return s.idleJobs(ctx, r, now)
	case MetricBudgetThreshold, MetricBudgetForecast:
		return s.budgetFindings(ctx, r, now)
	}
	return nil, fmt.Errorf("rule %s watches unknown metric %q", r.Name, r.Metric)
}

// teamCostSpikes: a team whose cost today passes threshold percent of its mean daily
// cost over the window's days before today. A team with no cost in the window has no
// mean to compare with and never fires.
func (s *Service) teamCostSpikes(ctx context.Context, r models.AlertRule, now time.Time) ([]finding, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	days := r.WindowSec / 86_400
	from := today.AddDate(0, 0, -int(days))
	spentToday, err := s.acc.Rollup(ctx, accounting.Query{By: store.ByTeam, From: today, To: today.AddDate(0, 0, 1), ChargedOnly: true})
	if err != nil {
		return nil, err
	}
	before, err := s.acc.Rollup(ctx, accounting.Query{By: store.ByTeam, From: from, To: today, ChargedOnly: true})
	if err != nil {
		return nil, err
	}
	money, err := s.money(ctx)
	if err != nil {
		return nil, err
	}
	window := map[int64]int64{}
	for _, row := range before {
		window[row.Key] = row.AmountMicros
	}
	projects, err := s.projectsByTeam(ctx)
	if err != nil {
		return nil, err
	}
	var out []finding
	for _, row := range spentToday {
		base := window[row.Key]
		if row.Key == 0 || base <= 0 || float64(row.AmountMicros)*float64(days)*100 <= r.Threshold*float64(base) {
			continue
		}
		mean := base / days
		ratio := 100 * float64(row.AmountMicros) * float64(days) / float64(base)
		out = append(out, finding{
			scope: ScopeTeam, scopeID: row.Key, period: today.Format(time.DateOnly), projectIDs: projects[row.Key],
			summary: fmt.Sprintf("team %s spent %s today, %.0f%% of its mean daily cost of %s over the %d days before (threshold %g%%)",
				row.Label, money(row.AmountMicros), ratio, money(mean), days, r.Threshold),
			evidence: map[string]any{"team": row.Label, "team_id": row.Key, "day": today.Format(time.DateOnly),
				"today_micros": row.AmountMicros, "mean_daily_micros": mean, "window_from": from.Format(time.DateOnly),
				"window_to": today.Format(time.DateOnly), "window_days": days, "ratio_pct": round1(ratio), "threshold_pct": r.Threshold},
		})
	}
	return out, nil
}

// idleProjects: a project whose GPUs were idle (below the idle utilisation) for more
// than threshold percent of the GPU time it held over the window, once it held at
// least MinIdleGPUMinutes. One alert per project per ISO week. The GPU time of every
// project comes from one grouped query, not one per project.
func (s *Service) idleProjects(ctx context.Context, r models.AlertRule, now time.Time) ([]finding, error) {
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	active := make([]int64, 0, len(projects))
	for _, p := range projects {
		if !p.Archived {
			active = append(active, p.ID)
		}
	}
	from := now.Add(-time.Duration(r.WindowSec) * time.Second)
	held, err := s.idle.ProjectsIdleMinutes(ctx, active, from, now, s.thresholds())
	if err != nil {
		return nil, err
	}
	year, week := now.UTC().ISOWeek()
	var out []finding
	for _, p := range projects {
		m, ok := held[p.ID]
		if p.Archived || !ok || m.Total < s.cfg.MinIdleGPUMinutes {
			continue
		}
		pct := 100 * float64(m.Idle) / float64(m.Total)
		if pct <= r.Threshold {
			continue
		}
		out = append(out, finding{
			scope: ScopeProject, scopeID: p.ID, period: fmt.Sprintf("%d-W%02d", year, week), projectIDs: []int64{p.ID},
			summary: fmt.Sprintf("project %s: its GPUs were idle (below %g%% utilisation) %.1f%% of %d GPU-minutes since %s (threshold %g%%)",
				p.Name, s.cfg.IdleUtilPct, pct, m.Total, from.UTC().Format(time.RFC3339), r.Threshold),
			evidence: map[string]any{"project": p.Name, "project_id": p.ID, "idle_pct": round1(pct), "gpu_minutes": m.Total,
				"idle_below_pct": s.cfg.IdleUtilPct, "threshold_pct": r.Threshold,
				"window_from": from.UTC().Format(time.RFC3339), "window_to": now.UTC().Format(time.RFC3339)},
		})
	}
	return out, nil
}

// idleJobs: a running job all of whose GPUs have been idle for threshold minutes or
// more. One alert per job attempt.
func (s *Service) idleJobs(ctx context.Context, r models.AlertRule, now time.Time) ([]finding, error) {
	limit := time.Duration(r.Threshold * float64(time.Minute))
	var out []finding
	for before := int64(0); ; {
		jobs, err := s.store.Jobs(ctx, store.JobFilter{States: []string{models.JobRunning}, BeforeID: before, Limit: 500})
		if err != nil {
			return nil, err
		}
		for i := range jobs {
			j := &jobs[i]
			idle, err := s.idle.JobIdleFor(ctx, j, now, now.Add(-2*limit), s.thresholds())
			if err != nil {
				return nil, err
			}
			if idle < limit {
				continue
			}
			minutes := int64(idle / time.Minute)
			out = append(out, finding{
				scope: ScopeJob, scopeID: j.ID, period: fmt.Sprintf("attempt-%d", j.Attempt), projectIDs: []int64{j.ProjectID}, jobID: j.ID,
				summary: fmt.Sprintf("job %s (#%d): its GPUs have been idle (below %g%% utilisation) for %d minutes (threshold %g)",
					j.Name, j.ID, s.cfg.IdleUtilPct, minutes, r.Threshold),
				evidence: map[string]any{"job": j.Name, "job_id": j.ID, "attempt": j.Attempt, "project_id": j.ProjectID,
					"idle_minutes": minutes, "idle_since": now.Add(-idle).UTC().Format(time.RFC3339), "threshold_minutes": r.Threshold,
					"idle_below_pct": s.cfg.IdleUtilPct},
			})
		}
		if len(jobs) < 500 {
			return out, nil
		}
		before = jobs[len(jobs)-1].ID
	}
}

// budgetFindings: for budget_threshold, the highest of a budget's thresholds that this
// month's spend has reached (one alert per threshold and month); for budget_forecast,
// a month-end forecast above threshold percent of the budget (one per month).
func (s *Service) budgetFindings(ctx context.Context, r models.AlertRule, now time.Time) ([]finding, error) {
	window := s.cfg.BudgetBurnWindow
	if r.Metric == MetricBudgetForecast {
		window = time.Duration(r.WindowSec) * time.Second
	}
	statuses, err := s.acc.BudgetStatuses(ctx, now, window)
	if err != nil {
		return nil, err
	}
	owners, projects, err := s.budgetOwners(ctx)
	if err != nil {
		return nil, err
	}
	money, err := s.money(ctx)
	if err != nil {
		return nil, err
	}
	month := now.UTC().Format("2006-01")
	var out []finding
	for _, st := range statuses {
		b := st.Budget
		owner, targets := owners[b.ID], projects[b.ID]
		evidence := map[string]any{"budget_id": b.ID, "owner": owner, "month": month, "budget_micros": b.AmountMicros,
			"spent_micros": st.Spent, "spent_pct": round1(st.SpentPercent())}
		switch r.Metric {
		case MetricBudgetThreshold:
			if len(st.Crossed) == 0 {
				continue
			}
			t := st.Crossed[len(st.Crossed)-1]
			evidence["threshold_pct"] = t
			out = append(out, finding{scope: ScopeBudget, scopeID: b.ID, period: fmt.Sprintf("%s/%d%%", month, t), projectIDs: targets, evidence: evidence,
				summary: fmt.Sprintf("%s has spent %s of its %s budget for %s (%.1f%%, threshold %d%%)",
					owner, money(st.Spent), money(b.AmountMicros), month, st.SpentPercent(), t)})
		case MetricBudgetForecast:
			if float64(st.Forecast)*100 <= r.Threshold*float64(b.AmountMicros) {
				continue
			}
			days := int64(window / (24 * time.Hour))
			evidence["forecast_micros"], evidence["forecast_pct"], evidence["threshold_pct"] = st.Forecast, round1(st.ForecastPercent()), r.Threshold
			evidence["burn_micros_per_day"], evidence["burn_window_days"] = st.Burn, days
			out = append(out, finding{scope: ScopeBudget, scopeID: b.ID, period: month, projectIDs: targets, evidence: evidence,
				summary: fmt.Sprintf("%s is forecast to spend %s in %s, %.1f%% of its %s budget (spent %s so far, burning %s a day over the last %d days; threshold %g%%)",
					owner, money(st.Forecast), month, st.ForecastPercent(), money(b.AmountMicros),
					money(st.Spent), money(st.Burn), days, r.Threshold)})
		}
	}
	return out, nil
}

// budgetOwners names each budget's owner ("team vision", "project detect") and lists the
// projects it covers.
func (s *Service) budgetOwners(ctx context.Context) (map[int64]string, map[int64][]int64, error) {
	budgets, err := s.acc.Budgets(ctx)
	if err != nil {
		return nil, nil, err
	}
	teams, err := s.store.Teams(ctx)
	if err != nil {
		return nil, nil, err
	}
	allProjects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, nil, err
	}
	byTeam, err := s.projectsByTeam(ctx)
	if err != nil {
		return nil, nil, err
	}
	teamNames, projectNames := make(map[int64]string, len(teams)), make(map[int64]string, len(allProjects))
	for _, t := range teams {
		teamNames[t.ID] = t.Name
	}
	for _, p := range allProjects {
		projectNames[p.ID] = p.Name
	}
	names, covered := map[int64]string{}, map[int64][]int64{}
	for _, b := range budgets {
		switch {
		case b.TeamID != nil:
			if name, ok := teamNames[*b.TeamID]; ok {
				names[b.ID] = "team " + name
			}
			covered[b.ID] = byTeam[*b.TeamID]
		case b.ProjectID != nil:
			if name, ok := projectNames[*b.ProjectID]; ok {
				names[b.ID] = "project " + name
			}
			covered[b.ID] = []int64{*b.ProjectID}
		}
	}
	return names, covered, nil
}

func (s *Service) projectsByTeam(ctx context.Context) (map[int64][]int64, error) {
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64][]int64{}
	for _, p := range projects {
		out[p.TeamID] = append(out[p.TeamID], p.ID)
	}
	return out, nil
}

// money returns what writes an amount of micro-units in an alert's words, with the
// currency's code.
func (s *Service) money(ctx context.Context) (func(int64) string, error) {
	cur, err := s.acc.Currency(ctx)
	if err != nil {
		return nil, err
	}
	return func(micros int64) string { return accounting.FormatAmount(micros, cur) }, nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
