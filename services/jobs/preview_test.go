package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// join registers a process node with simulated GPUs through the agent protocol and
// returns its GPUs' UUIDs.
func join(t *testing.T, d *dispatch.Service, st *store.Store, al *audit.Log, name, gpus string) []string {
	t.Helper()
	return joinRuntime(t, d, st, al, name, gpus, agentapi.RuntimeProcess)
}

// joinRuntime registers a node of the runtime, as join does.
func joinRuntime(t *testing.T, d *dispatch.Service, st *store.Store, al *audit.Log, name, gpus, runtime string) []string {
	t.Helper()
	ctx := context.Background()
	token, _, err := dispatch.CreateJoinToken(ctx, st, al, time.Now(), dispatch.JoinTokenSpec{Name: name, TTL: time.Hour})
	must(t, err)
	sim, err := gpu.NewSimulated(gpus, name, time.Now)
	must(t, err)
	inv, err := sim.Discover(ctx)
	must(t, err)
	_, err = d.Join(ctx, agentapi.JoinRequest{JoinToken: token, Name: name, Runtime: runtime, CPUMilli: 32000, MemoryMiB: 262144, Inventory: inv})
	must(t, err)
	var out []string
	for _, dev := range inv.Devices {
		out = append(out, dev.UUID)
	}
	return out
}

type noKick struct{}

func (noKick) Kick() {}

// A preview validates as Submit does, says where the job would start or why it
// waits, prices an hour on the GPUs it could get, recommends a cheaper profile from
// earlier runs, and stores nothing.
func TestPreview(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		al := audit.New(st, time.Now)
		sched, err := scheduler.New(scheduler.DefaultConfig())
		must(t, err)
		tel, err := telemetry.New(st, telemetry.Config{})
		must(t, err)
		d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: al, Telemetry: tel, Now: time.Now,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dispatch.DefaultConfig())
		must(t, err)
		acc, err := accounting.New(st, al, accounting.Config{})
		must(t, err)
		svc := jobs.New(st, al, noKick{}, nil)
		pv := jobs.NewPreviewer(svc, jobs.PreviewDeps{Placements: d, Prices: acc, History: tel})
		user := &models.User{Username: "ada"}
		must(t, st.CreateUser(ctx, user))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		project := &models.Project{TeamID: team.ID, Name: "detect", AllowCustomImages: true}
		must(t, st.CreateProject(ctx, project))
		spec := func(mutate func(*jobs.Spec)) jobs.Spec {
			s := jobs.Spec{Project: "detect", Name: "train", Command: []string{"python", "train.py", "--seed", "9"},
				Resources: jobs.Resources{GPUs: 1, CPUMilli: 2000, MemoryMiB: 8192}}
			if mutate != nil {
				mutate(&s)
			}
			return s
		}

		p, err := pv.Preview(ctx, user, spec(func(s *jobs.Spec) { s.Env = map[string]jobs.EnvVar{"A=B": jobs.Plain("1")} }))
		if err != nil || p.Invalid == nil || p.Invalid.Field != "env" || p.Placement != nil {
			t.Fatalf("preview of a bad spec = %+v, %v; want the field Submit names", p, err)
		}
		if _, err := svc.Submit(ctx, user, spec(func(s *jobs.Spec) { s.Env = map[string]jobs.EnvVar{"A=B": jobs.Plain("1")} })); err == nil || !strings.Contains(err.Error(), p.Invalid.Message) {
			t.Fatalf("Submit says %v, the preview %q", err, p.Invalid.Message)
		}

		a100 := join(t, d, st, al, "gpu-a", "2xA100-80GB")
		join(t, d, st, al, "gpu-l", "1xL4-24GB")
		for _, r := range []models.CostRate{
			{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: 4_000_000},
			{Resource: "gpu", GPUModel: "L4-24GB", RateMicros: 800_000},
			{Resource: "cpu", RateMicros: 50_000},
		} {
			r.EffectiveFrom = time.Now().Add(-time.Hour)
			_, err := acc.CreateRate(ctx, r)
			must(t, err)
		}

		p, err = pv.Preview(ctx, user, spec(nil))
		if err != nil || p.Invalid != nil || p.Placement == nil || !p.Placement.Placed || len(p.Costs) != 1 || p.Uncertified {
			t.Fatalf("preview of one GPU = %+v, %v", p, err)
		}
		want := map[string]int64{"A100-80GB": 4_100_000, "L4-24GB": 900_000}
		if c := p.Costs[0]; c.GPUModel != p.Placement.GPUModels[0] || c.PerHourMicros != want[c.GPUModel] || len(c.Unpriced) != 1 || c.Unpriced[0] != "ram" {
			t.Fatalf("cost of one GPU placed on %v = %+v", p.Placement.GPUModels, c)
		}

		p, err = pv.Preview(ctx, user, spec(func(s *jobs.Spec) {
			s.Resources.GPUs = 2
			s.Resources.GPUModel = "L4-24GB"
			s.Image = "docker.io/me/train:1"
		}))
		if err != nil || p.Placement == nil || p.Placement.Placed || !strings.Contains(p.Placement.Reason, "no node has room") || !p.Uncertified {
			t.Fatalf("preview of two L4s = %+v, %v", p, err)
		}
		if len(p.Costs) != 1 || p.Costs[0].GPUModel != "L4-24GB" || p.Costs[0].PerHourMicros != 1_700_000 {
			t.Fatalf("cost of two L4s = %+v", p.Costs)
		}

		// Three earlier runs of train.py on an A100 peaked at 10 GiB and 20% busy.
		for seed := range 3 {
			j := &models.Job{Name: "train", ProjectID: project.ID, UserID: user.ID, Command: `["python","train.py","--seed","` + string(rune('0'+seed)) + `"]`,
				PriorityClass: "research", GPUs: 1, GPUModel: "A100-80GB", Replicas: 1}
			must(t, st.CreateJob(ctx, j, "user:ada"))
			must(t, st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}))
			must(t, st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}))
			start := time.Now().UTC().Add(-time.Duration(3-seed) * time.Hour)
			for i := range 8 {
				at := start.Add(time.Duration(i) * 15 * time.Second)
				util, mem := 20, int64(10240)
				_, err := tel.Ingest(ctx, at, telemetry.NodeSample{NodeID: nodeID(t, st, "gpu-a"), Jobs: map[string]int64{a100[0]: j.ID},
					Sample: gpu.Sample{Time: at, Devices: []gpu.DeviceSample{{UUID: a100[0], UtilizationPct: &util, MemoryUsedMiB: &mem}}}})
				must(t, err)
			}
			must(t, st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobRunning, To: models.JobSucceeded}))
		}
		p, err = pv.Preview(ctx, user, spec(func(s *jobs.Spec) { s.Resources.GPUModel = "A100-80GB" }))
		if err != nil || p.Recommendation == nil {
			t.Fatalf("preview after three runs = %+v, %v; want a recommendation", p, err)
		}
		if r := p.Recommendation; r.Shape.Model != "L4-24GB" || r.Shape.Milli != 1000 || r.PerHourMicros != 800_000 || !strings.Contains(r.Evidence, "3 earlier runs peaked at 10.0 GiB") {
			t.Fatalf("recommendation = %+v", r)
		}
		if n, err := st.JobCountsByState(ctx); err != nil || n[models.JobQueued] != 0 || n[models.JobSucceeded] != 3 || len(n) != 1 {
			t.Fatalf("jobs after previews = %v, %v: previews store nothing", n, err)
		}
	})
}

func nodeID(t *testing.T, st *store.Store, name string) int64 {
	t.Helper()
	n, err := st.NodeByName(context.Background(), name)
	must(t, err)
	return n.ID
}
