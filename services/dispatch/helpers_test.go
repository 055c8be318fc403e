package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// clock is a settable clock for the service under test; a real one follows the
// wall clock, for tests on a real Slurm.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		return time.Now().UTC()
	}
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a dispatch service over a fresh store, with a user and a project.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	svc   *dispatch.Service
	clock *clock
	audit *audit.Log
	// telemetry keeps what heartbeats carry.
	telemetry *telemetry.Service
	user      *models.User
	proj      *models.Project
}

var testConfig = dispatch.Config{
	NodeTimeout: 30 * time.Second, HeartbeatInterval: 5 * time.Second,
	TickInterval: time.Second, LeaseRecheck: time.Minute, KillGrace: 10 * time.Second,
	LogLimit: dispatch.DefaultLogLimitMiB << 20,
}

func newEnv(t *testing.T, st *store.Store, sched dispatch.Scheduler) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), st: st, clock: &clock{t: time.Now().UTC().Truncate(time.Second)}}
	e.audit = audit.New(st, e.clock.now)
	var err error
	if e.telemetry, err = telemetry.New(st, telemetry.Config{}); err != nil {
		t.Fatal(err)
	}
	e.svc = e.restart(sched)
	e.user = &models.User{Username: "ada"}
	if err := st.CreateUser(e.ctx, e.user); err != nil {
		t.Fatal(err)
	}
	team := &models.Team{Name: "vision"}
	if err := st.CreateTeam(e.ctx, team); err != nil {
		t.Fatal(err)
	}
	e.proj = &models.Project{TeamID: team.ID, Name: "detect"}
	if err := st.CreateProject(e.ctx, e.proj); err != nil {
		t.Fatal(err)
	}
	return e
}

// restart builds a new service over the same store, as a restarted server does.
func (e *env) restart(sched dispatch.Scheduler) *dispatch.Service {
	e.t.Helper()
	return e.restartWith(sched, testConfig)
}

// restartWith is restart with another configuration.
func (e *env) restartWith(sched dispatch.Scheduler, cfg dispatch.Config) *dispatch.Service {
	e.t.Helper()
	svc, err := dispatch.New(dispatch.Deps{
		Store: e.st, Scheduler: sched, Audit: e.audit, Telemetry: e.telemetry, Now: e.clock.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// node is a joined node as the tests drive it.
type node struct {
	*models.Node
	credential string
	gpus       []string
}

// join creates a join token and joins a process node with spec's simulated GPUs.
func (e *env) join(name, spec string) node {
	e.t.Helper()
	return e.joinRuntime(name, spec, agentapi.RuntimeProcess)
}

// joinRuntime joins a node of the runtime with spec's simulated GPUs.
func (e *env) joinRuntime(name, spec, runtime string) node {
	e.t.Helper()
	token, _, err := dispatch.CreateJoinToken(e.ctx, e.st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "for-" + name, TTL: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	inv := gpu.Inventory{Devices: []gpu.Device{}}
	if spec != "" {
		sim, err := gpu.NewSimulated(spec, name, e.clock.now)
		if err != nil {
			e.t.Fatal(err)
		}
		if inv, err = sim.Discover(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	res, err := e.svc.Join(e.ctx, agentapi.JoinRequest{
		JoinToken: token, Name: name, Runtime: runtime,
		CPUMilli: 8000, MemoryMiB: 32768, ScratchMiB: 100000, Inventory: inv,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := e.svc.Authenticate(e.ctx, res.Credential)
	if err != nil {
		e.t.Fatal(err)
	}
	out := node{Node: n, credential: res.Credential}
	for _, d := range inv.Devices {
		out.gpus = append(out.gpus, d.UUID)
	}
	return out
}

// heartbeat sends a heartbeat from n at the current time.
func (e *env) heartbeat(n node) agentapi.HeartbeatResponse {
	e.t.Helper()
	fresh, err := e.svc.Authenticate(e.ctx, n.credential)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.svc.Heartbeat(e.ctx, fresh, agentapi.HeartbeatRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// submit queues a job with the given resources.
func (e *env) submit(name string, gpus int, mutate ...func(*models.Job)) *models.Job {
	e.t.Helper()
	j := &models.Job{Name: name, ProjectID: e.proj.ID, UserID: e.user.ID, Command: `["python","train.py"]`, Env: `{"EPOCHS":"3"}`,
		PriorityClass: "research", GPUs: gpus, CPUMilli: 1000, MemoryMiB: 1024, Replicas: 1}
	for _, m := range mutate {
		m(j)
	}
	if err := e.st.CreateJob(e.ctx, j, "user:ada"); err != nil {
		e.t.Fatal(err)
	}
	return j
}

func (e *env) job(id int64) *models.Job {
	e.t.Helper()
	j, err := e.st.JobByID(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// leases returns the leases of n without waiting.
func (e *env) leases(n node) agentapi.Leases {
	e.t.Helper()
	l, err := e.svc.Leases(e.ctx, n.Node, "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func (e *env) report(n node, ref agentapi.AttemptRef, event string, exit *int) error {
	return e.svc.Report(e.ctx, n.Node, agentapi.Report{AttemptRef: ref, Event: event, ExitCode: exit})
}

func (e *env) mustReport(n node, ref agentapi.AttemptRef, event string, exit *int) {
	e.t.Helper()
	if err := e.report(n, ref, event, exit); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) wantState(id int64, state string) *models.Job {
	e.t.Helper()
	j := e.job(id)
	if j.State != state {
		evs, _ := e.st.JobEvents(e.ctx, id)
		e.t.Fatalf("job %d is %s (%s), want %s; events: %+v", id, j.State, j.StateReason, state, evs)
	}
	return j
}

// auditActions lists the actions in the audit log, oldest first.
func (e *env) auditActions() []string {
	e.t.Helper()
	evs, err := e.st.AuditEventsAfter(e.ctx, store.AuditFilter{}, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Action
	}
	return out
}

func code(n int) *int { return &n }

// ended drains the service's signal that allocations ended, and reports whether it was set.
func ended(s *dispatch.Service) bool {
	select {
	case <-s.Ended():
		return true
	default:
		return false
	}
}
