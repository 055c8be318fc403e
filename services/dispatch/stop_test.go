package dispatch_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// preempting places like first-fit and, once, preempts the job it is told to.
type preempting struct {
	dispatchtest.FirstFit
	victim *int64
}

func (p preempting) Plan(s dispatch.Snapshot) dispatch.Plan {
	plan := p.FirstFit.Plan(s)
	if *p.victim != 0 {
		plan.Preemptions = append(plan.Preemptions, dispatch.Preemption{JobID: *p.victim, Reason: "preempted by a production job"})
		*p.victim = 0
	}
	return plan
}

// A preempted job is asked to checkpoint with its class's grace, goes back to
// the queue when it stopped, and runs again as a new attempt without spending a retry.
func TestPreemptionRequeuesWithoutARetry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		victim := new(int64)
		e := newEnv(t, st, preempting{victim: victim})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("low", 1, func(j *models.Job) { j.PriorityClass = "test"; j.Preemptible = true })
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)

		*victim = j.ID
		e.submit("high", 1, func(j *models.Job) { j.PriorityClass = "production" })
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobPreempting)
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopPreempt || l[0].Stop.GraceMS != 30000 {
			t.Fatalf("lease of the victim = %+v; want a preempt stop with the test class's 30 s grace", l)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		got := e.wantState(j.ID, models.JobQueued)
		if got.Retries != 0 || got.StateReason != "preempted" {
			t.Fatalf("preempted job = retries %d reason %q", got.Retries, got.StateReason)
		}
		if !slices.Contains(e.auditActions(), "job.preempted") {
			t.Error("preemption not audited")
		}
		// Not preemptible: the scheduler's wish is refused.
		*victim = 0
		e.svc.Tick(e.ctx) // the production job takes the GPU
		hold := e.submit("steady", 0, func(j *models.Job) { j.Preemptible = false })
		e.svc.Tick(e.ctx)
		*victim = hold.ID
		e.svc.Tick(e.ctx)
		if s := e.job(hold.ID).State; s == models.JobPreempting {
			t.Fatal("a job that is not preemptible was preempted")
		}
	})
}

// A draining node takes no new work; at its deadline what runs there is
// checkpoint-stopped and requeued; a node with work cannot go down.
func TestDrainStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xL4-24GB")
		j := e.submit("long", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)

		if _, err := e.svc.SetNodeState(e.ctx, "gpu-1", models.NodeDown, "retire", time.Time{}); err == nil {
			t.Fatal("a node with running work went down")
		}
		if _, err := e.svc.SetNodeState(e.ctx, "gpu-1", models.NodeDraining, "kernel update", e.clock.now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		other := e.submit("new", 1)
		e.svc.Tick(e.ctx)
		e.wantState(other.ID, models.JobQueued)
		e.wantState(j.ID, models.JobRunning)

		e.clock.advance(61 * time.Second)
		e.heartbeat(n)
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobPreempting)
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopDrain || l[0].Stop.GraceMS != 120000 {
			t.Fatalf("lease on the drained node = %+v", l)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		if got := e.wantState(j.ID, models.JobQueued); got.StateReason != "drained" || got.Retries != 0 {
			t.Fatalf("drained job = %q retries %d", got.StateReason, got.Retries)
		}
		if _, err := e.svc.SetNodeState(e.ctx, "gpu-1", models.NodeDown, "retire", time.Time{}); err != nil {
			t.Fatal(err)
		}
		// Asked again, a state the node is in leaves it as it is, unaudited.
		if n, err := e.svc.SetNodeState(e.ctx, "gpu-1", models.NodeDown, "retire again", time.Time{}); err != nil || n.State != models.NodeDown || n.StateReason != "retire" {
			t.Fatalf("down again = %+v, %v; want down, as it was", n, err)
		}
		if _, err := e.svc.SetNodeState(e.ctx, "gpu-1", "asleep", "", time.Time{}); err == nil {
			t.Fatal("an unknown state was accepted")
		}
		actions := e.auditActions()
		if !slices.Contains(actions, "node.draining") || !slices.Contains(actions, "node.down") {
			t.Errorf("audit = %v", actions)
		}
		downs := 0
		for _, a := range actions {
			if a == "node.down" {
				downs++
			}
		}
		if downs != 1 {
			t.Errorf("audit = %v: node.down %d times, want once", actions, downs)
		}
	})
}

// A governance release checkpoints the job and requeues it, its GPU free again: it
// resumes on its next attempt without spending a retry or waiting for a person.
func TestGovernanceReleaseRequeuesTheJob(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("idle", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		if err := e.svc.CheckpointAndRelease(e.ctx, j.ID, "GPU idle for 2h"); err != nil {
			t.Fatal(err)
		}
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopRelease || l[0].Stop.GraceMS != 120000 {
			t.Fatalf("lease = %+v", l)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		if got := e.wantState(j.ID, models.JobQueued); got.Retries != 0 || got.StateReason != "released" {
			t.Fatalf("released job = %s (%s), %d retries; want queued as released, no retry spent", got.State, got.StateReason, got.Retries)
		}
		e.svc.Tick(e.ctx)
		if got := e.wantState(j.ID, models.JobScheduled); got.Attempt != 2 {
			t.Fatalf("released job = attempt %d, want 2", got.Attempt)
		}
		if !slices.Contains(e.auditActions(), "job.released") {
			t.Error("governance release not audited")
		}
	})
}

// A governance stop checkpoints the job and holds it; released, it runs again.
func TestGovernanceStopHoldsTheJob(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("idle", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		if err := e.svc.CheckpointAndStop(e.ctx, j.ID, "GPU idle for 2h"); err != nil {
			t.Fatal(err)
		}
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopGovernance || l[0].Stop.GraceMS != 120000 {
			t.Fatalf("lease = %+v", l)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		if got := e.wantState(j.ID, models.JobHeld); got.Retries != 0 {
			t.Fatalf("held job spent a retry: %d", got.Retries)
		}
		if err := e.svc.CheckpointAndStop(e.ctx, j.ID, "again"); err == nil {
			t.Fatal("a held job was stopped again")
		}
		if err := st.TransitionJob(e.ctx, j.ID, store.Transition{From: models.JobHeld, To: models.JobQueued, Reason: "released"}); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		if got := e.wantState(j.ID, models.JobScheduled); got.Attempt != 2 {
			t.Fatalf("released job = attempt %d", got.Attempt)
		}
		if !slices.Contains(e.auditActions(), "job.stopped") {
			t.Error("governance stop not audited")
		}
	})
}
