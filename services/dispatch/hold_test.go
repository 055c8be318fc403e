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
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A held job is not scheduled until released; only a queued job can be held and only
// a held one released; both are events with their actor, and audited.
func TestHoldAndRelease(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		e.join("gpu-a", "1xA100-80GB")
		j := e.submit("train", 1)
		if _, err := e.svc.ReleaseJob(e.ctx, j.ID, "user:ada", ""); !errors.Is(err, dispatch.ErrWrongState) {
			t.Fatalf("release of a queued job: %v, want ErrWrongState", err)
		}
		held, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", "")
		if err != nil || held.State != models.JobHeld {
			t.Fatalf("hold = %+v, %v", held, err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobHeld)
		if _, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", ""); !errors.Is(err, dispatch.ErrWrongState) {
			t.Fatalf("hold of a held job: %v, want ErrWrongState", err)
		}
		if _, err := e.svc.ReleaseJob(e.ctx, j.ID, "user:bob", "capacity is back"); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobScheduled)
		// Scheduled but not started: nothing to checkpoint, so it is held at once.
		if held, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", ""); err != nil || held.State != models.JobHeld {
			t.Fatalf("hold of a scheduled job = %+v, %v", held, err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobHeld)
		evs, err := st.JobEvents(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, ev := range evs {
			seen = append(seen, ev.ToState+"/"+ev.Reason+"/"+ev.Actor)
		}
		want := []string{"queued/submitted/user:ada", "held/held/user:ada", "queued/released/user:bob", "scheduled/scheduled/scheduler",
			"preempting/hold/user:ada", "held/held/user:ada"}
		if !slices.Equal(seen, want) {
			t.Fatalf("events = %v, want %v", seen, want)
		}
		if acts := e.auditActions(); !slices.Contains(acts, "job.held") || !slices.Contains(acts, "job.released") {
			t.Fatalf("audit = %v", acts)
		}
	})
}

// Held while it runs, a job is asked to checkpoint and stop with its class's grace,
// as a preemption is; once its attempt ended it is held, not requeued, in the name
// of who held it, and stays so through ticks. Released, it runs a next attempt
// without a retry spent. A job that is stopping cannot be held again.
func TestHoldOfARunningJobCheckpointsAndHolds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		stopping, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", "")
		if err != nil || stopping.State != models.JobPreempting {
			t.Fatalf("hold of a running job = %+v, %v; want it preempting", stopping, err)
		}
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopHold || l[0].Stop.GraceMS != 120000 {
			t.Fatalf("lease = %+v, want a checkpoint-then-stop for the hold with the class's grace", l)
		}
		if _, err := e.svc.HoldJob(e.ctx, j.ID, "user:bob", ""); !errors.Is(err, dispatch.ErrWrongState) {
			t.Fatalf("hold of a stopping job: %v, want ErrWrongState", err)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		held := e.wantState(j.ID, models.JobHeld)
		if held.Retries != 0 || held.StateReason != "held" {
			t.Fatalf("held job = %q, %d retries; want held without a retry spent", held.StateReason, held.Retries)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobHeld)
		if len(e.leases(n).Allocations) != 0 {
			t.Fatalf("the held job still has a lease: %+v", e.leases(n).Allocations)
		}
		evs, err := st.JobEvents(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-2:]
		if last[0].ToState != models.JobPreempting || last[0].Actor != "user:ada" || !strings.HasPrefix(last[0].Message, "held by user:ada") ||
			last[1].ToState != models.JobHeld || last[1].Actor != "user:ada" || !strings.HasPrefix(last[1].Message, "held by user:ada") {
			t.Fatalf("last events = %+v, want preempting then held, both held by user:ada", last)
		}
		if _, err := e.svc.ReleaseJob(e.ctx, j.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		if got := e.wantState(j.ID, models.JobScheduled); got.Attempt != 2 || got.Retries != 0 {
			t.Fatalf("released job = attempt %d, %d retries; want attempt 2 without a retry spent", got.Attempt, got.Retries)
		}
		if acts := e.auditActions(); !slices.Contains(acts, "job.held") || !slices.Contains(acts, "job.released") {
			t.Fatalf("audit = %v", acts)
		}
	})
}

// A job placed on a Slurm pool that has not started is held at once: its reservation
// ends (stop reason held-in-slurm) and frees the node for the next job; released, it
// is placed again as its next attempt once there is room.
func TestHoldAJobPlacedOnASlurmPool(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		slurmNodeInPools(t, e, "hpc")
		j := e.submit("first", 2, func(j *models.Job) { j.GPUModel = "A100-80GB" })
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobScheduled)
		if held, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", ""); err != nil || held.State != models.JobHeld {
			t.Fatalf("hold of a job waiting to be submitted to Slurm = %+v, %v", held, err)
		}
		allocs, _ := st.AllocationsOfJob(e.ctx, j.ID)
		if len(allocs) != 1 || allocs[0].State != models.AllocEnded || allocs[0].StopReason != "held-in-slurm" || allocs[0].StartedAt != nil {
			t.Fatalf("the held job's reservation: %+v", allocs)
		}
		next := e.submit("next", 2, func(j *models.Job) { j.GPUModel = "A100-80GB" })
		e.svc.Tick(e.ctx)
		e.wantState(next.ID, models.JobScheduled)
		if _, err := e.svc.ReleaseJob(e.ctx, j.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobQueued) // the node's GPUs are the next job's now

		if _, err := e.svc.CancelJob(e.ctx, next.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		a, _ := st.AllocationsOfJob(e.ctx, next.ID)
		now := time.Now().UTC()
		if err := st.UpdateAllocation(e.ctx, a[0].ID, []string{a[0].State}, store.AllocationChange{State: models.AllocEnded, EndedAt: &now}); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		if got := e.wantState(j.ID, models.JobScheduled); got.Attempt != 2 {
			t.Errorf("the released job placed again at attempt %d, want 2", got.Attempt)
		}
	})
}
