package accounting_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Scale of the roll-up benchmark: a year of hourly metering for 1,000 users.
const (
	benchUsers    = 1000
	benchTeams    = 50
	benchProjects = 200
	benchNodes    = 50
	benchDays     = 365
)

// yearOfLedger fills s with a year of ledger: each user runs one job of 1 to 8 hours on
// each weekday (GPU, CPU and RAM charged per hour, as metering writes them), and each
// node's idle GPUs are charged as unallocated every hour.
func yearOfLedger(b *testing.B, s *store.Store) (start time.Time, entries int) {
	ctx := context.Background()
	start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var teams, projects, users []int64
	for i := range benchTeams {
		tm := &models.Team{Name: fmt.Sprintf("team-%02d", i)}
		must(b, s.CreateTeam(ctx, tm))
		teams = append(teams, tm.ID)
	}
	for i := range benchProjects {
		p := &models.Project{TeamID: teams[i%benchTeams], Name: fmt.Sprintf("project-%03d", i)}
		must(b, s.CreateProject(ctx, p))
		projects = append(projects, p.ID)
	}
	for i := range benchUsers {
		u := &models.User{Username: fmt.Sprintf("user-%04d", i)}
		must(b, s.CreateUser(ctx, u))
		users = append(users, u.ID)
	}
	pool := &models.NodePool{Name: "main", Provider: "static", CapacityType: models.CapacityOnDemand}
	must(b, s.CreateNodePool(ctx, pool))
	var nodes []int64
	for i := range benchNodes {
		n := &models.Node{Name: fmt.Sprintf("node-%02d", i), State: models.NodeReady, PoolID: &pool.ID}
		must(b, s.CreateNode(ctx, n, nil))
		nodes = append(nodes, n.ID)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	models8 := []string{"A100-80GB", "H100-80GB", "L4-24GB", "L40S-48GB"}
	var batch []models.LedgerEntry
	flush := func() {
		must(b, s.AppendLedgerEntries(ctx, batch))
		entries += len(batch)
		batch = batch[:0]
	}
	for d := range benchDays {
		day := start.AddDate(0, 0, d)
		var jobs []models.Job
		if wd := day.Weekday(); wd != time.Saturday && wd != time.Sunday {
			must(b, s.InTx(ctx, func(tx *store.Store) error {
				for u := range benchUsers {
					j := models.Job{Name: "j", ProjectID: projects[u%benchProjects], UserID: users[u], Command: `["true"]`, PriorityClass: "research", SubmittedAt: day}
					if err := tx.CreateJob(ctx, &j, "bench"); err != nil {
						return err
					}
					jobs = append(jobs, j)
				}
				return nil
			}))
		}
		for i, j := range jobs {
			u := i
			hours := 1 + rng.IntN(8)
			begin := day.Add(time.Duration(rng.IntN(15)) * time.Hour)
			node := nodes[rng.IntN(benchNodes)]
			model := models8[u%len(models8)]
			for h := range hours {
				from := begin.Add(time.Duration(h) * time.Hour)
				for _, res := range []string{models.ResourceGPU, models.ResourceCPU, models.ResourceRAM} {
					e := models.LedgerEntry{JobID: &j.ID, Attempt: 1, UserID: &users[u], ProjectID: &projects[u%benchProjects],
						TeamID: &teams[(u%benchProjects)%benchTeams], PoolID: &pool.ID, NodeID: &node, Resource: res,
						QuantityMilli: 1000, RateMicros: 2_000_000, AmountMicros: 2_000_000, PeriodStart: from, PeriodEnd: from.Add(time.Hour)}
					if res == models.ResourceGPU {
						e.GPUModel = model
					}
					batch = append(batch, e)
				}
			}
		}
		for h := range 24 {
			from := day.Add(time.Duration(h) * time.Hour)
			for i := range nodes {
				batch = append(batch, models.LedgerEntry{PoolID: &pool.ID, NodeID: &nodes[i], GPUModel: models8[i%len(models8)],
					Resource: models.ResourceGPU, QuantityMilli: 4000, RateMicros: 2_000_000, AmountMicros: 8_000_000,
					PeriodStart: from, PeriodEnd: from.Add(time.Hour)})
			}
		}
		flush()
	}
	return start, entries
}

// BenchmarkCostRollups runs the cost page's questions over a year of ledger for 1,000
// users, from the daily ledger and, as the baseline, from the entries themselves.
func BenchmarkCostRollups(b *testing.B) {
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			s := storetest.Open(b, be.Config(b))
			began := time.Now()
			start, n := yearOfLedger(b, s)
			b.Logf("%s: %d ledger entries for a year written in %s", be.Name, n, time.Since(began).Round(time.Second))
			month := start.AddDate(0, 6, 0)
			queries := []struct {
				name string
				q    store.RollupQuery
			}{
				{"month-by-team-per-day", store.RollupQuery{By: store.ByTeam, Bucket: store.BucketDay, From: month, To: month.AddDate(0, 1, 0)}},
				{"month-spend-of-one-team", store.RollupQuery{TeamIDs: []int64{1}, ChargedOnly: true, From: month, To: month.AddDate(0, 1, 0)}},
				{"year-by-team-per-month", store.RollupQuery{By: store.ByTeam, Bucket: store.BucketMonth, From: start, To: start.AddDate(1, 0, 0)}},
				{"year-by-gpu-model-per-week", store.RollupQuery{By: store.ByGPUModel, Bucket: store.BucketWeek, From: start, To: start.AddDate(1, 0, 0)}},
				{"year-top-20-users", store.RollupQuery{By: store.ByUser, ChargedOnly: true, Limit: 20, From: start, To: start.AddDate(1, 0, 0)}},
			}
			for _, bq := range queries {
				for source, fn := range map[string]func(context.Context, store.RollupQuery) ([]store.RollupRow, error){
					"daily": s.CostRollup, "entries": s.CostRollupFromEntries} {
					b.Run(bq.name+"/"+source, func(b *testing.B) {
						for b.Loop() {
							if _, err := fn(context.Background(), bq.q); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		})
	}
}
