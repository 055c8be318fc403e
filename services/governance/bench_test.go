package governance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// Sizes of the rule benchmark: an organisation of 1,000 projects in 50 teams, each
// project with a monthly budget, some spend, and one job whose GPU held 60 minutes of
// the last day; 20 rules watch them.
const (
	benchProjects = 1000
	benchTeams    = 50
	benchRules    = 20
	benchMinutes  = 60
)

// BenchmarkRulesAtScale evaluates 20 rules over 1,000 projects as Evaluate does it (one
// query grouped by project per project-idle rule; four grouped queries per budget rule)
// and, as the baseline measured in the same run, the way it was done before: one query
// per project (for one rule), two per budget (for 20 rules). Every project idles 30% of
// its GPU time under thresholds of 50-69%, and every budget is far from its forecast
// thresholds, so nothing fires and both ways measure the reading alone. Run with
// -benchtime=1x; figures in docs/governance-benchmark.md.
func BenchmarkRulesAtScale(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			cfg := be.Config(b)
			s := storetest.Open(b, cfg)
			ctx := audit.WithActor(context.Background(), audit.System())
			now := time.Now().UTC().Truncate(time.Minute)
			al := audit.New(s, time.Now)
			acc, err := accounting.New(s, al, accounting.Config{})
			must(b, err)
			tel, err := telemetry.New(s, telemetry.Config{})
			must(b, err)
			gov, err := governance.New(governance.Deps{Store: s, Accounting: acc, Audit: al, Idle: tel,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, governance.Config{})
			must(b, err)
			began := time.Now()
			projects := benchOrganisation(b, ctx, s, acc, now)
			if cfg.DatabaseURL != "" {
				// As autovacuum would soon after a load like this one; SQLite is left without
				// statistics, as Gantry leaves it.
				db, err := storetest.SQL(cfg)
				must(b, err)
				_, err = db.Exec("ANALYZE")
				must(b, err)
				must(b, db.Close())
			}
			b.Logf("%s: %d projects, budgets, spend and %d GPU-minutes each written in %s (GOMAXPROCS %d)",
				be.Name, len(projects), benchMinutes, time.Since(began).Round(time.Second), runtime.GOMAXPROCS(0))
			defaults, err := gov.Rules(ctx)
			must(b, err)
			for _, r := range defaults {
				_, err := gov.UpdateRule(ctx, r.ID, governance.RuleInput{Name: r.Name, Metric: r.Metric, Threshold: r.Threshold,
					WindowSec: r.WindowSec, Action: r.Action, Enabled: false})
				must(b, err)
			}
			idle := benchRuleSet(b, ctx, gov, "idle", governance.MetricProjectIdleRate, 50, 86_400)
			budget := benchRuleSet(b, ctx, gov, "forecast", governance.MetricBudgetForecast, 100, 7*86_400)
			th := advice.DefaultThresholds()
			from := now.Add(-24 * time.Hour)
			// The two ways must agree: the baselines check what they read against this.
			grouped, err := tel.ProjectsIdleMinutes(ctx, projects, from, now, th)
			must(b, err)
			if len(grouped) != benchProjects {
				b.Fatalf("grouped idle minutes of %d projects, want %d", len(grouped), benchProjects)
			}
			statuses, err := acc.BudgetStatuses(ctx, now, 7*24*time.Hour)
			must(b, err)
			spent := map[int64]int64{}
			for _, st := range statuses {
				spent[st.Budget.ID] = st.Spent
			}
			evaluate := withCPU(func(b *testing.B) {
				for b.Loop() {
					rep, err := gov.Evaluate(ctx, now)
					if err != nil || len(rep.Raised) != 0 || len(rep.Problems) != 0 {
						b.Fatalf("evaluate: %+v, %v", rep, err)
					}
				}
			})
			enable(b, ctx, gov, idle, true)
			b.Run("idle/grouped/20-rules", evaluate)
			enable(b, ctx, gov, idle[1:], false)
			b.Run("idle/grouped/1-rule", evaluate)
			// One rule only: on SQLite each per-project query scans the window's telemetry,
			// so 20 rules over 1,000 projects would take 20 times as long again.
			b.Run("idle/per-project/1-rule", withCPU(func(b *testing.B) {
				for b.Loop() {
					list, err := s.Projects(ctx)
					must(b, err)
					ids := make([]int64, 0, len(list))
					for _, p := range list {
						ids = append(ids, p.ID)
					}
					if got := perProjectIdleMinutes(b, ctx, tel, ids, from, now, th); !maps.Equal(got, grouped) {
						b.Fatalf("per-project idle minutes (%d projects) differ from the grouped ones (%d)", len(got), len(grouped))
					}
				}
			}))
			enable(b, ctx, gov, idle[:1], false)
			enable(b, ctx, gov, budget, true)
			b.Run("budget/grouped/20-rules", evaluate)
			b.Run("budget/per-budget/20-rules", withCPU(func(b *testing.B) {
				for b.Loop() {
					for range benchRules {
						budgets, err := acc.Budgets(ctx)
						must(b, err)
						for _, bu := range budgets {
							if got, _ := perBudgetSpend(b, ctx, s, bu, now); got != spent[bu.ID] || got == 0 {
								b.Fatalf("budget %d: per-budget spend %d, grouped %d", bu.ID, got, spent[bu.ID])
							}
						}
					}
				}
			}))
		})
	}
}

// withCPU reports the CPU time this process (not the database server) spent per op, the
// figure that a shared, loaded machine distorts least.
func withCPU(fn func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		before := cpuTime(b)
		fn(b)
		b.ReportMetric(float64((cpuTime(b)-before).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	must(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRuleSet adds 20 disabled rules on metric, thresholds from lowest up.
func benchRuleSet(b *testing.B, ctx context.Context, gov *governance.Service, prefix, metric string, lowest float64, window int64) []governance.RuleInput {
	var out []governance.RuleInput
	for i := range benchRules {
		in := governance.RuleInput{Name: fmt.Sprintf("%s-%02d", prefix, i), Metric: metric, Threshold: lowest + float64(i), WindowSec: window, Action: governance.ActionNotify}
		_, err := gov.CreateRule(ctx, in)
		must(b, err)
		out = append(out, in)
	}
	return out
}

// enable turns the rules on or off.
func enable(b *testing.B, ctx context.Context, gov *governance.Service, rules []governance.RuleInput, on bool) {
	have, err := gov.Rules(ctx)
	must(b, err)
	for _, in := range rules {
		for _, r := range have {
			if r.Name == in.Name {
				in.Enabled = on
				_, err := gov.UpdateRule(ctx, r.ID, in)
				must(b, err)
			}
		}
	}
}

// perBudgetSpend is the old way: the month's and the burn week's spend of one budget,
// one query each.
func perBudgetSpend(b *testing.B, ctx context.Context, s *store.Store, bu models.Budget, now time.Time) (spent, burned int64) {
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	today := now.Truncate(24 * time.Hour)
	for i, span := range [][2]time.Time{{month, month.AddDate(0, 1, 0)}, {today.AddDate(0, 0, -7), today}} {
		q := store.RollupQuery{From: span[0], To: span[1], ChargedOnly: true}
		if bu.TeamID != nil {
			q.TeamIDs = []int64{*bu.TeamID}
		} else {
			q.ProjectIDs = []int64{*bu.ProjectID}
		}
		rows, err := s.CostRollup(ctx, q)
		must(b, err)
		for _, r := range rows {
			if i == 0 {
				spent += r.AmountMicros
			} else {
				burned += r.AmountMicros
			}
		}
	}
	return spent, burned
}

// perProjectIdleMinutes is the old way: one query per project.
func perProjectIdleMinutes(b *testing.B, ctx context.Context, tel *telemetry.Service, projects []int64, from, to time.Time, th advice.Thresholds) map[int64]store.GPUMinutes {
	out := map[int64]store.GPUMinutes{}
	for _, id := range projects {
		one, err := tel.ProjectsIdleMinutes(ctx, []int64{id}, from, to, th)
		must(b, err)
		maps.Copy(out, one)
	}
	return out
}

// benchOrganisation writes the benchmark's teams, projects, jobs and 1-minute telemetry
// (18 of each job's 60 minutes idle), 1.00 of egress per project today and a 10,000.00
// monthly budget per project, and returns the project ids.
func benchOrganisation(b *testing.B, ctx context.Context, s *store.Store, acc *accounting.Accounting, now time.Time) []int64 {
	b.Helper()
	_, err := acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceEgress, RateMicros: 1_000_000, EffectiveFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
	must(b, err)
	today := now.Truncate(24 * time.Hour)
	u := &models.User{Username: "bench"}
	must(b, s.CreateUser(ctx, u))
	node := &models.Node{Name: "bench", State: models.NodeReady}
	must(b, s.CreateNode(ctx, node, []models.GPUDevice{{Index: 0, UUID: "bench-g0", Model: "A100-80GB"}}))
	var teams []int64
	for i := range benchTeams {
		t := &models.Team{Name: fmt.Sprintf("team-%02d", i)}
		must(b, s.CreateTeam(ctx, t))
		teams = append(teams, t.ID)
	}
	var ids []int64
	var rows []models.TelemetrySample
	start := now.Add(-2 * time.Hour)
	for i := range benchProjects {
		p := &models.Project{TeamID: teams[i%benchTeams], Name: fmt.Sprintf("project-%04d", i)}
		must(b, s.CreateProject(ctx, p))
		ids = append(ids, p.ID)
		j := &models.Job{Name: "bench", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
		must(b, s.CreateJob(ctx, j, "bench"))
		_, err := acc.RecordUsage(ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: p.ID, Bytes: 1 << 30, From: today, To: today.Add(time.Second)})
		must(b, err)
		_, err = acc.CreateBudget(ctx, accounting.BudgetInput{ProjectID: &p.ID, AmountMicros: 10_000_000_000})
		must(b, err)
		for m := range benchMinutes {
			util := 80.0
			if m < benchMinutes*3/10 {
				util = 2
			}
			rows = append(rows, models.TelemetrySample{NodeID: node.ID, DeviceUUID: fmt.Sprintf("bench-g%04d", i), JobID: &j.ID, At: start.Add(time.Duration(m) * time.Minute),
				Resolution: models.ResolutionMinute, UtilPct: util, UtilMinPct: util, UtilMaxPct: util, Samples: 4, Reported: models.ReportedUtil})
		}
		if len(rows) >= 6000 {
			must(b, s.InsertTelemetry(ctx, rows))
			rows = rows[:0]
		}
	}
	must(b, s.InsertTelemetry(ctx, rows))
	return ids
}
