package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// BenchmarkSubmitToRunning measures, on an idle node, how long a submitted job
// takes to run: submission, the dispatch pass with the production scheduler, the
// lease poll, the agent starting the job's supervisor and process, and the start
// report. 200 jobs one after the other; p50 and p99 from the database's own
// timestamps, and the same percentiles of starting a bare process here as the
// floor. Run: go test -run '^$' -bench SubmitToRunning -benchtime 1x ./cmd/gantry
func BenchmarkSubmitToRunning(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := storetest.Open(b, storetest.Backends()[0].Config(b))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sched, err := productionScheduler(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	al := audit.New(st, time.Now)
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: sched, Audit: al, Now: time.Now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	go d.Run(ctx)
	srv := httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "bench", Log: log, Dispatch: d}))
	defer srv.Close()

	user, project := benchFixture(b, st)
	token, _, err := dispatch.CreateJoinToken(ctx, st, al, time.Now(), dispatch.JoinTokenSpec{Name: "bench", TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	agentCmd := exec.Command(binary, "agent", "--server", srv.URL, "--join-token", token, "--data-dir", filepath.Join(dir, "agent"),
		"--name", "bench", "--simulate-gpus", "8xA100-80GB", "--cpu-milli", "64000", "--memory-mib", "65536", "--scratch-mib", "100000")
	agentCmd.Env = cleanEnv()
	if err := agentCmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { agentCmd.Process.Kill(); agentCmd.Wait() }()
	for {
		if n, err := st.NodeByName(ctx, "bench"); err == nil && n.State == models.NodeReady {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	submit := jobs.New(st, al, d, nil)
	const n = 200
	var latency, floor []time.Duration
	b.ResetTimer()
	for range b.N {
		for i := range n {
			j, err := submit.Submit(ctx, user, jobs.Spec{Project: project, Name: "bench", Command: []string{"/bin/true"}, Resources: jobs.Resources{GPUs: 1}})
			if err != nil {
				b.Fatal(err)
			}
			for {
				got, err := st.JobByID(ctx, j.ID)
				if err != nil {
					b.Fatal(err)
				}
				if got.StartedAt != nil {
					latency = append(latency, got.StartedAt.Sub(got.SubmittedAt))
					break
				}
				if models.IsTerminal(got.State) {
					b.Fatalf("job %d ended %s before it was seen running", j.ID, got.State)
				}
				time.Sleep(2 * time.Millisecond)
			}
			if i%10 == 0 {
				t0 := time.Now()
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Fatal(err)
				}
				floor = append(floor, time.Since(t0))
			}
		}
	}
	b.StopTimer()
	p50, p99 := percentile(latency, 50), percentile(latency, 99)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(percentile(floor, 50).Microseconds())/1000, "bare-exec-p50-ms")
	b.Logf("submit-to-running over %d jobs: p50 %s, p99 %s, max %s; a bare fork/exec here takes %s (p50)",
		len(latency), p50, p99, slices.Max(latency), percentile(floor, 50))
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func benchFixture(b *testing.B, st *store.Store) (*models.User, string) {
	ctx := context.Background()
	u := &models.User{Username: "bench"}
	team := &models.Team{Name: "bench"}
	if err := st.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateTeam(ctx, team); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(binary); err != nil {
		b.Fatal("the gantry binary was not built: ", err)
	}
	return u, "bench"
}
