package store_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// listIndexes are the indexes of migrations 0027-0029: what the jobs list's state,
// user and image filters cost every state change (on SQLite only 0027's, which hold
// the state; on PostgreSQL all, as no update of a job's state is HOT).
var listIndexes = []string{"jobs_project_state_submitted", "jobs_project_state_name", "jobs_project_state_gpus", "jobs_state_name", "jobs_state_gpus",
	"jobs_user_name", "jobs_user_gpus", "jobs_image_name", "jobs_image_gpus", "jobs_image_ref_name", "jobs_image_ref_gpus"}

// BenchmarkTransitionJob moves jobs between queued and held among 100,000 jobs, with
// every index, then on SQLite with jobs_submitted as before migration 0034, then
// without the indexes of migrations 0027-0029, on SQLite and PostgreSQL: the write
// cost of the list's covering, state, user and image indexes. cpu-µs/op is this process's CPU per
// state change (PostgreSQL's own is not in it; its ns/op is).
//
//	go test ./services/store/ -run '^$' -bench BenchmarkTransitionJob -benchtime 2000x
func BenchmarkTransitionJob(b *testing.B) {
	const jobs = 100_000
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			s := storetest.Open(b, cfg)
			ctx := context.Background()
			seedJobs(b, cfg, s, jobs)
			queued, err := s.Jobs(ctx, store.JobFilter{States: []string{models.JobQueued}, Limit: 1000})
			if err != nil || len(queued) != 1000 {
				b.Fatalf("%d queued jobs, %v", len(queued), err)
			}
			// Each op moves one job: queued to held on even passes over the jobs, back on odd ones.
			moves := 0
			run := func(b *testing.B) {
				cpu := processCPU(b)
				b.ResetTimer()
				for range b.N {
					from, to := models.JobQueued, models.JobHeld
					if moves/len(queued)%2 == 1 {
						from, to = to, from
					}
					if err := s.TransitionJob(ctx, queued[moves%len(queued)].ID, store.Transition{From: from, To: to, Reason: "bench"}); err != nil {
						b.Fatal(err)
					}
					moves++
				}
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			}
			b.Run("all-indexes", run)
			if backend.Name == "sqlite" {
				// As before migration 0034, whose covering index holds the state.
				storetest.Exec(b, cfg, "DROP INDEX jobs_submitted_brief")
				storetest.Exec(b, cfg, "CREATE INDEX jobs_submitted ON jobs (submitted_at, id)")
				b.Run("without-0034", run)
			}
			for _, index := range listIndexes {
				storetest.Exec(b, cfg, "DROP INDEX "+index)
			}
			b.Run("without-0027-0029", run)
		})
	}
}

// seeded is what seedJobs wrote besides the jobs.
type seeded struct {
	projects []int64
	grace    int64  // the user of one job in 50
	image    int64  // the catalog image of one job in 25
	ref      string // its reference
}

// seedJobs writes n jobs in four projects behind the store's back, in one statement
// (through the store they would take minutes): 7 in 13 succeeded, then failed,
// cancelled, running, queued twice and held, GPUs 0 to 8, submitted at once (on
// PostgreSQL a minute apart), one in 50 by grace and the others by ada, one in 25 of a
// catalog image and the others of a custom reference.
func seedJobs(tb testing.TB, cfg store.Config, s *store.Store, n int) seeded {
	tb.Helper()
	ctx := context.Background()
	u := &models.User{Username: "ada"}
	if err := s.CreateUser(ctx, u); err != nil {
		tb.Fatal(err)
	}
	g := &models.User{Username: "grace"}
	if err := s.CreateUser(ctx, g); err != nil {
		tb.Fatal(err)
	}
	img := &models.Image{Name: "pytorch-2.4", Reference: "nvcr.io/nvidia/pytorch:24.07-py3", Framework: "pytorch", Status: models.ImageCertified}
	if err := s.CreateImage(ctx, img); err != nil {
		tb.Fatal(err)
	}
	out := seeded{grace: g.ID, image: img.ID, ref: img.Reference}
	team := &models.Team{Name: "vision"}
	if err := s.CreateTeam(ctx, team); err != nil {
		tb.Fatal(err)
	}
	for _, name := range []string{"detect", "segment", "track", "caption"} {
		p := &models.Project{TeamID: team.ID, Name: name}
		if err := s.CreateProject(ctx, p); err != nil {
			tb.Fatal(err)
		}
		out.projects = append(out.projects, p.ID)
	}
	seed := `INSERT INTO jobs (name, project_id, user_id, image_id, image_ref, command, gpus, priority_class, state, submitted_at, created_at, updated_at)
		SELECT 'train-' || i, CASE i % 4 WHEN 0 THEN $1 WHEN 1 THEN $2 WHEN 2 THEN $3 ELSE $4 END, CASE i % 50 WHEN 0 THEN $8 ELSE $5 END,
		CASE i % 25 WHEN 3 THEN $9 END, CASE i % 25 WHEN 3 THEN $10 ELSE 'ghcr.io/lab/train:v1' END, '["true"]', i % 9, 'research',
		CASE WHEN i % 13 < 7 THEN 'succeeded' WHEN i % 13 = 7 THEN 'failed' WHEN i % 13 = 8 THEN 'cancelled' WHEN i % 13 = 9 THEN 'running'
		WHEN i % 13 < 12 THEN 'queued' ELSE 'held' END, $6, $6, $6 FROM `
	if cfg.DatabaseURL == "" {
		seed += `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $7) SELECT i FROM n)`
	} else {
		// Placeholders typed for PostgreSQL, which cannot infer them inside CASE ($10
		// before $1: a Replacer tries its pairs in order); submissions a minute apart,
		// so that its statistics know the column.
		seed = strings.NewReplacer("$10", "$10::text", "$1", "$1::bigint", "$2", "$2::bigint", "$3", "$3::bigint", "$4", "$4::bigint",
			"$5", "$5::bigint", "$8", "$8::bigint", "$9", "$9::bigint",
			"$6, $6, $6", "$6::timestamptz - i * interval '1 minute', $6, $6").Replace(seed) + `generate_series(1, $7) AS i`
	}
	db, err := storetest.SQL(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	p := out.projects
	if _, err := db.Exec(seed, p[0], p[1], p[2], p[3], u.ID, time.Now().UTC(), n, g.ID, img.ID, img.Reference); err != nil {
		tb.Fatal(err)
	}
	return out
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJobsPageReads is the store's part of an admin's jobs page: the first 26
// jobs of 1,000, with the columns the page shows and their project and user names,
// and every project's name (on PostgreSQL, one round trip), under a context that can
// end as a request's can. cpu-µs/op is this
// process's CPU per page (PostgreSQL's own is not in it); run it with -benchmem for
// the allocations that the page's collector pays for.
//
//	go test ./services/store/ -run '^$' -bench BenchmarkJobsPageReads -benchmem
func BenchmarkJobsPageReads(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			s := storetest.Open(b, cfg)
			// A request's context, which can end.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seedJobs(b, cfg, s, 1000)
			f := store.JobFilter{Sort: store.JobsBySubmitted, Limit: 26, Columns: store.BriefJobColumns}
			cpu := processCPU(b)
			for b.Loop() {
				jobs, names, err := s.BriefJobsAndProjectNames(ctx, f)
				if err != nil || len(jobs) != 26 || len(names) != 4 {
					b.Fatalf("%d jobs, %d names, %v", len(jobs), len(names), err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
