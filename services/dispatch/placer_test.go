package dispatch_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func realScheduler(t *testing.T) dispatch.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return dispatch.NewPlacer(s)
}

// The production scheduler places whole GPUs, shares and MIG instances, counts
// what already runs, and says in words why a job waits.
func TestPlacerWithTheRealScheduler(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		whole := e.join("gpu-a", "2xA100-80GB")
		mig := e.join("gpu-m", "1xA100-40GB:mig=3g.20gb+3g.20gb")
		pair := e.submit("pair", 2)
		share := e.submit("share", 1, func(j *models.Job) { j.GPUMilli = 500; j.GPUMemoryMiB = 10000 })
		slices := []*models.Job{
			e.submit("slice-1", 1, func(j *models.Job) { j.MIGProfile = "3g.20gb" }),
			e.submit("slice-2", 1, func(j *models.Job) { j.MIGProfile = "3g.20gb" }),
			e.submit("slice-3", 1, func(j *models.Job) { j.MIGProfile = "3g.20gb" }),
		}
		e.svc.Tick(e.ctx)
		e.wantState(pair.ID, models.JobScheduled)
		if w := e.wantState(share.ID, models.JobQueued); w.PendingReason == "" {
			t.Error("the share waits without a reason")
		}
		e.wantState(slices[0].ID, models.JobScheduled)
		e.wantState(slices[1].ID, models.JobScheduled)
		if w := e.wantState(slices[2].ID, models.JobQueued); w.PendingReason == "" {
			t.Error("the third slice waits without a reason")
		}
		if l := e.leases(whole).Allocations; len(l) != 1 || len(l[0].Devices) != 2 || l[0].Devices[0].MemoryMiB != 81920 {
			t.Fatalf("leases of the whole-GPU node = %+v", l)
		}
		seen := map[string]bool{}
		for _, l := range e.leases(mig).Allocations {
			d := l.Devices[0]
			if !strings.HasPrefix(d.MIGUUID, "MIG-") || d.MIGProfile != "3g.20gb" || seen[d.MIGUUID] {
				t.Fatalf("MIG lease = %+v", l)
			}
			seen[d.MIGUUID] = true
		}

		// Once the pair ends, the share fits; what still runs is counted on the next pass.
		e.mustReport(whole, agentapi.AttemptRef{JobID: pair.ID, Attempt: 1}, agentapi.EventStarted, nil)
		e.mustReport(whole, agentapi.AttemptRef{JobID: pair.ID, Attempt: 1}, agentapi.EventExited, code(0))
		e.svc.Tick(e.ctx)
		e.wantState(share.ID, models.JobScheduled)
		e.wantState(slices[2].ID, models.JobQueued)
		l := e.leases(whole).Allocations
		if len(l) != 1 || l[0].Devices[0].Milli != 500 || l[0].Devices[0].MemoryMiB != 10000 {
			t.Fatalf("share lease = %+v", l)
		}
	})
}

// The production scheduler preempts a preemptible test job for a production job;
// the victim checkpoints and requeues, and the production job takes its GPU.
func TestPlacerPreemptsALowerClass(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		n := e.join("gpu-1", "1xL4-24GB")
		low := e.submit("low", 1, func(j *models.Job) { j.PriorityClass = "test"; j.Preemptible = true })
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: low.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		high := e.submit("high", 1, func(j *models.Job) { j.PriorityClass = "production" })
		e.svc.Tick(e.ctx)
		e.wantState(low.ID, models.JobPreempting)
		waiting := e.wantState(high.ID, models.JobQueued)
		if want := fmt.Sprintf("waits for job %d to stop: it was preempted for this job", low.ID); !strings.Contains(waiting.PendingReason, want) {
			t.Errorf("the production job waits because %q, want %q", waiting.PendingReason, want)
		}
		evs, _ := st.JobEvents(e.ctx, low.ID)
		if last := evs[len(evs)-1]; !strings.Contains(last.Message, "preempted for job "+strconv.FormatInt(high.ID, 10)) {
			t.Errorf("preemption event = %+v", last)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		e.svc.Tick(e.ctx)
		e.wantState(high.ID, models.JobScheduled)
		if got := e.wantState(low.ID, models.JobQueued); got.Retries != 0 {
			t.Fatalf("victim spent a retry: %d", got.Retries)
		}
	})
}
