package pools_test

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// loopEnv is env with the production scheduler in dispatch and the autoscaler loop.
type loopEnv struct {
	*env
	loop *pools.Autoscaler
	proj *models.Project
	user *models.User
}

func newLoopEnv(t *testing.T, st *store.Store) *loopEnv {
	t.Helper()
	e := newEnv(t, st)
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.disp, err = dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: e.audit, Now: e.clock.now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if e.svc, err = pools.New(pools.Deps{Store: st, Audit: e.audit, Fleet: e.disp, Now: e.clock.now, Log: log}, poolsConfig); err != nil {
		t.Fatal(err)
	}
	dec, err := autoscale.New(sched, autoscale.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	loop, err := pools.NewAutoscaler(e.svc, dec, e.disp, nil, pools.LoopConfig{Every: time.Second, ReconcileEvery: time.Second,
		SampleEvery: time.Second, SampleRetention: time.Hour, DrainGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	le := &loopEnv{env: e, loop: loop, user: &models.User{Username: "ada"}}
	team := &models.Team{Name: "vision"}
	if err := st.CreateUser(e.ctx, le.user); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTeam(e.ctx, team); err != nil {
		t.Fatal(err)
	}
	le.proj = &models.Project{TeamID: team.ID, Name: "detect"}
	if err := st.CreateProject(e.ctx, le.proj); err != nil {
		t.Fatal(err)
	}
	acc, err := accounting.New(st, e.audit, accounting.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []models.CostRate{
		{Resource: models.ResourceGPU, GPUModel: "L4-24GB", CapacityType: models.CapacityOnDemand, RateMicros: 800_000},
		{Resource: models.ResourceGPU, GPUModel: "L4-24GB", CapacityType: models.CapacitySpot, RateMicros: 250_000},
	} {
		r.EffectiveFrom = e.clock.now().Add(-time.Hour)
		if _, err := acc.CreateRate(e.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return le
}

func (e *loopEnv) submit(name string, spot bool) *models.Job {
	e.t.Helper()
	j := &models.Job{Name: name, ProjectID: e.proj.ID, UserID: e.user.ID, Command: `["true"]`, PriorityClass: "research",
		GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024, Replicas: 1, Spot: spot}
	if err := e.st.CreateJob(e.ctx, j, "user:ada"); err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *loopEnv) tick() {
	e.t.Helper()
	if err := e.loop.Tick(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// From no nodes at all: a job that allows spot brings up a node of the cheaper spot
// pool, one that does not an on-demand node; booting machines are not asked for
// twice; the job runs once its node joins; an idle node goes after its timeout, its
// machine deleted; every decision is an event with its reason, and samples are kept.
func TestAutoscalerScalesUpFromZeroAndDownWhenIdle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newLoopEnv(t, st)
		spot := e.pool("l4-spot", func(s *pools.Spec) { s.IdleTimeout = "5m" })
		od := e.pool("l4-od", func(s *pools.Spec) { s.CapacityType = models.CapacityOnDemand; s.IdleTimeout = "5m" })
		flexible := e.submit("flexible", true)
		e.tick()
		spotInst, odInst := e.instances(spot), e.instances(od)
		if len(spotInst) != 1 || len(odInst) != 0 || len(e.machines()) != 1 {
			t.Fatalf("after one spot-allowed job: spot %v, on-demand %v", spotInst, odInst)
		}
		evs, _ := e.st.PoolEvents(e.ctx, store.PoolEventFilter{PoolID: spot.ID})
		if len(evs) != 1 || evs[0].Kind != models.PoolScaleUp || !strings.Contains(evs[0].Reason, "cheapest") || !strings.Contains(evs[0].Detail, `"jobs":["`) {
			t.Fatalf("events %+v", evs)
		}
		e.clock.advance(2 * time.Minute)
		e.tick()
		if len(e.machines()) != 1 {
			t.Fatalf("the booting machine was asked for again: %v", e.machines())
		}
		strict := e.submit("strict", false)
		e.tick()
		if len(e.instances(od)) != 1 || len(e.instances(spot)) != 1 {
			t.Fatalf("a job that does not allow spot: on-demand %v spot %v events %v", e.instances(od), e.instances(spot), e.eventKinds(spot))
		}
		for _, m := range e.machines() {
			if _, err := e.boot(m); err != nil {
				t.Fatal(err)
			}
		}
		e.tick() // labels the new nodes with their pool's labels
		e.disp.Tick(e.ctx)
		for _, j := range []*models.Job{flexible, strict} {
			got, _ := st.JobByID(e.ctx, j.ID)
			if got.State != models.JobScheduled {
				t.Fatalf("job %s is %s (%s) once the nodes joined", j.Name, got.State, got.PendingReason)
			}
			a, _ := st.AllocationByAttempt(e.ctx, j.ID, 1, 0)
			n, _ := st.NodeByID(e.ctx, a.NodeID)
			if want := map[bool]string{true: "l4-spot-", false: "l4-od-"}[j.Spot]; !strings.HasPrefix(n.Name, want) {
				t.Fatalf("job %s runs on %s, want a node of %s", j.Name, n.Name, want)
			}
			if !strings.Contains(n.Labels, pools.LabelPool) {
				t.Fatalf("node %s has no pool labels: %q", n.Name, n.Labels)
			}
		}
		// Both jobs end; ten minutes later (past the idle timeout and the scale-down
		// delay) their nodes go.
		for _, j := range []*models.Job{flexible, strict} {
			if _, err := e.disp.CancelJob(e.ctx, j.ID, "user:ada", "done"); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.advance(11 * time.Minute)
		e.tick()
		for _, p := range []*models.NodePool{spot, od} {
			for name, in := range e.instances(p) {
				if in.State != models.InstanceDeleting {
					t.Fatalf("idle node %s is %s, want deleting", name, in.State)
				}
			}
		}
		e.clock.advance(2 * time.Second)
		e.tick()
		if len(e.machines()) != 0 {
			t.Fatalf("machines left after scale-down: %v", e.machines())
		}
		kinds := e.eventKinds(spot)
		if !slices.Equal(kinds, []string{models.PoolScaleUp, models.PoolScaleDown, models.PoolDeleted}) {
			t.Fatalf("spot pool events %v", kinds)
		}
		samples, err := st.PoolSamples(e.ctx, spot.ID, time.Time{}, e.clock.now().Add(time.Second))
		if err != nil || len(samples) != 4 || samples[0].PendingJobs != 1 || samples[1].Booting != 1 || samples[1].PendingJobs != 1 ||
			samples[2].Nodes != 1 || samples[3].Nodes != 0 {
			t.Fatalf("samples %+v, %v", samples, err)
		}
	})
}

// A node whose provider announced a reclaim is no capacity any more: its machine is
// marked deleting with a reclaim event, and deleted once its jobs moved off.
func TestAutoscalerRetiresReclaimedMachines(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newLoopEnv(t, st)
		p := e.pool("l4-spot")
		insts, err := e.svc.CreateNodes(e.ctx, *p, 1, "a job waits", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.boot(e.machines()[insts[0].Name]); err != nil {
			t.Fatal(err)
		}
		if err := e.disp.Reclaim(e.ctx, insts[0].Name, e.clock.now().Add(2*time.Minute), "AWS spot instance-action: terminate"); err != nil {
			t.Fatal(err)
		}
		e.tick()
		in := e.instances(p)[insts[0].Name]
		if in.State != models.InstanceDeleting || !strings.Contains(in.StateReason, "AWS spot") {
			t.Fatalf("reclaimed machine %+v", in)
		}
		e.clock.advance(2 * time.Second)
		e.tick()
		if len(e.machines()) != 0 {
			t.Fatalf("the reclaimed machine was not deleted: %v", e.machines())
		}
		if got := e.eventKinds(p); !slices.Equal(got, []string{models.PoolScaleUp, models.PoolReclaim, models.PoolDeleted}) {
			t.Fatalf("events %v", got)
		}
		evs, _ := e.st.PoolEvents(e.ctx, store.PoolEventFilter{PoolID: p.ID, Limit: 1})
		if !strings.Contains(evs[0].Reason, "reclaimed by its provider") || strings.Contains(evs[0].Reason, "scaled down") {
			t.Fatalf("deletion reason %q", evs[0].Reason)
		}
		if n, _ := st.NodeByName(e.ctx, insts[0].Name); n.State != models.NodeDown {
			t.Fatalf("node %s, want down", n.State)
		}
	})
}

// A pool's template says its runtime, so scale-up from zero brings a job a node that
// will start it: a container image a node of the docker pool, a plain command one of
// the process pool, though both pools offer the same machine at the same price.
func TestAutoscalerScalesUpThePoolWhoseRuntimeStartsTheJob(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newLoopEnv(t, st)
		containers := e.pool("l4-b-docker", func(s *pools.Spec) { s.Template.Runtime = agentapi.RuntimeDocker })
		plain := e.pool("l4-a-plain", func(s *pools.Spec) { s.Template.Runtime = agentapi.RuntimeProcess })
		image := &models.Job{Name: "image", ProjectID: e.proj.ID, UserID: e.user.ID, Command: `["python","train.py"]`, ImageRef: "registry.example.com/team/train:1",
			PriorityClass: "research", GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024, Replicas: 1, Spot: true}
		if err := e.st.CreateJob(e.ctx, image, "user:ada"); err != nil {
			t.Fatal(err)
		}
		e.tick()
		if len(e.instances(containers)) != 1 || len(e.instances(plain)) != 0 {
			t.Fatalf("an image job: docker pool %v, process pool %v", e.instances(containers), e.instances(plain))
		}
		e.submit("plain", true)
		e.tick()
		if len(e.instances(containers)) != 1 || len(e.instances(plain)) != 1 {
			t.Fatalf("then a plain command: docker pool %v, process pool %v", e.instances(containers), e.instances(plain))
		}
	})
}

// A node an admin removes can never serve again (its credential is gone), so its
// machine is deleted, with the removal as the reason, and replaced only where the pool
// is below its minimum; removing a node of no pool changes no pool.
func TestRemovedNodeGivesItsMachineBack(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newLoopEnv(t, st)
		kept := e.pool("l4-min", func(s *pools.Spec) { s.MinNodes = 1; s.IdleTimeout = "1h" })
		spot := e.pool("l4-spot", func(s *pools.Spec) { s.IdleTimeout = "1h" })
		e.tick()
		if _, err := e.svc.CreateNodes(e.ctx, *spot, 1, "a job waits", nil); err != nil {
			t.Fatal(err)
		}
		if len(e.instances(kept)) != 1 || len(e.machines()) != 2 {
			t.Fatalf("min pool %v, cloud %v", e.instances(kept), e.machines())
		}
		for _, m := range e.machines() {
			if _, err := e.boot(m); err != nil {
				t.Fatal(err)
			}
		}
		secret, _, err := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "gpu-1", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.boot(machine{Name: "gpu-1", JoinToken: secret}); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(2 * time.Second)
		e.tick()
		before, events := e.machines(), len(e.eventKinds(kept))+len(e.eventKinds(spot))

		if _, err := e.disp.RemoveNode(e.ctx, "gpu-1", "removed by ada"); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(2 * time.Second)
		e.tick()
		if len(e.machines()) != len(before) || len(e.eventKinds(kept))+len(e.eventKinds(spot)) != events {
			t.Fatalf("removing a node of no pool changed a pool: cloud %v, events %v %v", e.machines(), e.eventKinds(kept), e.eventKinds(spot))
		}

		for name := range before {
			if _, err := e.disp.RemoveNode(e.ctx, name, "removed by ada"); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.advance(2 * time.Second)
		e.tick()
		for name := range before {
			if _, ok := e.machines()[name]; ok {
				t.Fatalf("the machine of removed node %s still runs", name)
			}
		}
		for _, p := range []*models.NodePool{kept, spot} {
			evs, err := st.PoolEvents(e.ctx, store.PoolEventFilter{PoolID: p.ID})
			if err != nil {
				t.Fatal(err)
			}
			deleted := 0
			for _, ev := range evs {
				if ev.Kind == models.PoolDeleted {
					deleted++
					if !strings.Contains(ev.Reason, "node removed by ada") {
						t.Errorf("pool %s: deletion event says %q, want the removal", p.Name, ev.Reason)
					}
				}
			}
			if deleted != 1 {
				t.Errorf("pool %s has %d deletion events, want 1", p.Name, deleted)
			}
			for name, in := range e.instances(p) {
				if _, removed := before[name]; removed && (in.State != models.InstanceDeleted || in.StateReason != "node removed by ada: deleted" || in.DeletedAt == nil) {
					t.Errorf("instance of removed node %s: %+v", name, in)
				}
			}
		}
		if e.auditCount("pool.deleted") != 2 {
			t.Fatalf("%d pool.deleted audit entries, want 2", e.auditCount("pool.deleted"))
		}
		// The pool of minimum 1 asks for a new machine; the other, needing none, does not.
		if ms := e.machines(); len(ms) != 1 {
			t.Fatalf("cloud after the removals: %v, want one new machine of l4-min", ms)
		}
		for name, m := range e.machines() {
			if m.Pool != "l4-min" || e.instances(kept)[name].State != models.InstanceRequested {
				t.Fatalf("new machine %s of pool %s: %+v", name, m.Pool, e.instances(kept)[name])
			}
		}
	})
}
