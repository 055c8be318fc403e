package dispatch_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A node silent past the timeout is lost: its job moves to another node under a
// new attempt, and when the lost node speaks again its old attempt is refused and
// no longer leased, so its agent stops it.
func TestLostNodeRequeuesAndIsFencedOnReturn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		a := e.join("gpu-a", "1xL4-24GB")
		j := e.submit("train", 1, func(j *models.Job) { j.MaxRetries = 1 })
		e.svc.Tick(e.ctx)
		old := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(a, old, agentapi.EventStarted, nil)
		b := e.join("gpu-b", "1xL4-24GB")

		e.clock.advance(20 * time.Second)
		e.heartbeat(b)
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobRunning) // 20 s of silence is within the timeout

		ended(e.svc)
		e.clock.advance(15 * time.Second)
		e.heartbeat(b)
		e.svc.Tick(e.ctx)
		lost, _ := st.NodeByID(e.ctx, a.ID)
		if lost.State != models.NodeLost || !strings.Contains(lost.StateReason, "sent no heartbeat for 35s") {
			t.Fatalf("silent node = %s (%s)", lost.State, lost.StateReason)
		}
		if !ended(e.svc) {
			t.Error("losing a node did not signal that its allocations ended")
		}
		got := e.wantState(j.ID, models.JobScheduled)
		if got.Attempt != 2 || got.Retries != 1 {
			t.Fatalf("requeued job = attempt %d retries %d", got.Attempt, got.Retries)
		}
		evs, _ := st.JobEvents(e.ctx, j.ID)
		requeue := evs[len(evs)-2]
		if requeue.ToState != models.JobQueued || requeue.Reason != "node-lost" || !strings.Contains(requeue.Message, "attempt 1 lost its node (node gpu-a sent no heartbeat for 35s); retry 1 of 1") {
			t.Fatalf("requeue event = %+v", requeue)
		}
		if l := e.leases(b).Allocations; len(l) != 1 || l[0].Attempt != 2 {
			t.Fatalf("leases of the healthy node = %+v", l)
		}

		// The lost node comes back.
		if res := e.heartbeat(a); res.NodeState != models.NodeReady {
			t.Fatalf("returning node is %s", res.NodeState)
		}
		if l := e.leases(a).Allocations; len(l) != 0 {
			t.Fatalf("the returning node still leases its old attempt: %+v", l)
		}
		if err := e.report(a, old, agentapi.EventExited, code(0)); !errors.Is(err, dispatch.ErrStaleAttempt) {
			t.Fatalf("exit of the stale attempt: %v, want ErrStaleAttempt", err)
		}
		e.wantState(j.ID, models.JobScheduled)
		actions := e.auditActions()
		if !slices.Contains(actions, "node.lost") || !slices.Contains(actions, "node.recovered") {
			t.Errorf("audit log = %v", actions)
		}
	})
}

// Without retries a job whose node is lost fails, with the reason.
func TestLostNodeFailsJobWithoutRetries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		a := e.join("gpu-a", "1xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		e.mustReport(a, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)
		e.clock.advance(31 * time.Second)
		e.svc.Tick(e.ctx)
		got := e.wantState(j.ID, models.JobFailed)
		if got.StateReason != "node-lost" || got.ExitCode != nil {
			t.Fatalf("failed job = reason %q exit %v", got.StateReason, got.ExitCode)
		}
	})
}

// A restarted server gives agents one timeout to reconnect before judging them:
// they could not heartbeat while it was down.
func TestRestartedServerWaitsBeforeLosingNodes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		a := e.join("gpu-a", "1xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		e.mustReport(a, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)

		e.clock.advance(2 * time.Minute) // the server was down for two minutes
		e.svc = e.restart(dispatchtest.FirstFit{})
		e.svc.Tick(e.ctx)
		if n, _ := st.NodeByID(e.ctx, a.ID); n.State != models.NodeReady {
			t.Fatalf("node judged %s right after the restart", n.State)
		}
		e.clock.advance(10 * time.Second)
		e.heartbeat(a)
		e.clock.advance(25 * time.Second)
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobRunning)
		if l := e.leases(a).Allocations; len(l) != 1 || !l[0].Started {
			t.Fatalf("leases after the restart = %+v", l)
		}
		e.clock.advance(31 * time.Second)
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobFailed)
	})
}

// A gang starts as one: running once every replica runs; when one replica fails
// the others are stopped and the job fails.
func TestGangFailsAsOne(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		a := e.join("gpu-a", "1xL4-24GB")
		b := e.join("gpu-b", "1xL4-24GB")
		j := e.submit("ddp", 1, func(j *models.Job) { j.Replicas = 2 })
		e.svc.Tick(e.ctx)
		nodes := map[int]node{}
		for _, n := range []node{a, b} {
			for _, l := range e.leases(n).Allocations {
				nodes[l.Replica] = n
			}
		}
		if len(nodes) != 2 || nodes[0].ID == nodes[1].ID {
			t.Fatalf("replicas not on two nodes: %v", nodes)
		}
		r0 := agentapi.AttemptRef{JobID: j.ID, Attempt: 1, Replica: 0}
		r1 := agentapi.AttemptRef{JobID: j.ID, Attempt: 1, Replica: 1}
		e.mustReport(nodes[0], r0, agentapi.EventStarted, nil)
		e.wantState(j.ID, models.JobScheduled)
		e.mustReport(nodes[1], r1, agentapi.EventStarted, nil)
		e.wantState(j.ID, models.JobRunning)

		e.mustReport(nodes[0], r0, agentapi.EventExited, code(1))
		e.wantState(j.ID, models.JobRunning)
		l := e.leases(nodes[1]).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopReplica {
			t.Fatalf("surviving replica's lease = %+v", l)
		}
		e.mustReport(nodes[1], r1, agentapi.EventExited, code(-1))
		got := e.wantState(j.ID, models.JobFailed)
		if got.ExitCode == nil || *got.ExitCode != 1 {
			t.Fatalf("gang exit code = %v, want the failed replica's 1", got.ExitCode)
		}
	})
}

// badScheduler puts every queued job on the first GPU of the first node.
type badScheduler struct{}

func (badScheduler) Plan(s dispatch.Snapshot) dispatch.Plan {
	var p dispatch.Plan
	for _, j := range s.Queue {
		p.Placements = append(p.Placements, dispatch.Placement{JobID: j.ID, Replicas: []dispatch.ReplicaPlacement{
			{NodeID: s.Nodes[0].ID, GPUs: []agentapi.Device{{UUID: s.Nodes[0].GPUs[0].UUID, Milli: 1000}}},
		}})
	}
	return p
}

// A plan that overcommits is refused for the jobs that do not fit.
func TestOvercommittingPlanIsRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, badScheduler{})
		n := e.join("gpu-1", "1xL4-24GB")
		first := e.submit("one", 1)
		second := e.submit("two", 1)
		e.svc.Tick(e.ctx)
		e.wantState(first.ID, models.JobScheduled)
		e.wantState(second.ID, models.JobQueued)
		e.svc.Tick(e.ctx)
		e.wantState(second.ID, models.JobQueued)
		if l := e.leases(n).Allocations; len(l) != 1 {
			t.Fatalf("leases = %+v", l)
		}
	})
}

// Heartbeats carry GPU samples; each reading is kept, under the job that holds the
// GPU. A sample that cannot be kept is refused without failing the heartbeat.
func TestHeartbeatTelemetry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		sim, err := gpu.NewSimulated("2xL4-24GB", "gpu-1", e.clock.now)
		if err != nil {
			t.Fatal(err)
		}
		sample, err := sim.Sample(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.Heartbeat(e.ctx, n.Node, agentapi.HeartbeatRequest{Sample: &sample})
		if err != nil || res.TelemetryError != "" {
			t.Fatalf("heartbeat = %+v, %v", res, err)
		}
		held := e.leases(n).Allocations[0].Devices[0].UUID
		rows, err := st.Telemetry(e.ctx, store.TelemetryFilter{JobID: j.ID, Resolution: models.ResolutionRaw})
		if err != nil || len(rows) != 1 || rows[0].DeviceUUID != held || rows[0].NodeID != n.ID {
			t.Fatalf("telemetry of the job = %+v, %v", rows, err)
		}
		sample.Time = e.clock.now().Add(time.Hour) // a node clock an hour fast
		res, err = e.svc.Heartbeat(e.ctx, n.Node, agentapi.HeartbeatRequest{Sample: &sample})
		if err != nil || res.TelemetryError == "" {
			t.Fatalf("heartbeat with a bad sample = %+v, %v; want it counted and the sample refused", res, err)
		}
		if got, _ := st.NodeByID(e.ctx, n.ID); !got.LastHeartbeatAt.Equal(e.clock.now()) {
			t.Fatalf("the heartbeat did not count: %v", got.LastHeartbeatAt)
		}
	})
}

// A heartbeat commits its liveness and its report together; when the history
// cannot take the report (here its table is gone), the heartbeat still counts, a
// lost node still comes back, and the agent is told why its report was dropped.
func TestHeartbeatCountsWhenItsReportCannotBeStored(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			e := newEnv(t, st, dispatchtest.FirstFit{})
			n := e.join("gpu-1", "1xL4-24GB")
			storetest.Exec(t, cfg, "UPDATE nodes SET state = 'lost' WHERE name = 'gpu-1'")
			n.State = models.NodeLost
			storetest.Exec(t, cfg, "DROP TABLE telemetry_samples")
			e.clock.advance(time.Minute)
			util := 50
			sample := gpu.Sample{Time: e.clock.now(), Devices: []gpu.DeviceSample{{UUID: n.gpus[0], UtilizationPct: &util}}}
			res, err := e.svc.Heartbeat(e.ctx, n.Node, agentapi.HeartbeatRequest{Sample: &sample})
			if err != nil || !strings.Contains(res.TelemetryError, "telemetry_samples") || res.NodeState != models.NodeReady {
				t.Fatalf("heartbeat = %+v, %v; want it counted, the node ready and the report's failure named", res, err)
			}
			got, err := st.NodeByID(e.ctx, n.ID)
			if err != nil || got.State != models.NodeReady || !got.LastHeartbeatAt.Equal(e.clock.now()) {
				t.Fatalf("node after the heartbeat = %+v, %v; want ready, heard from now", got, err)
			}
		})
	}
}
