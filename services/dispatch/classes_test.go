package dispatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The priority classes of the database reach every pass: a class whose right to preempt
// is taken away waits instead, and a maximum run time fails a job that runs too long.
func TestPriorityClassesApplyAtTheNextPass(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		n := e.join("gpu-1", "1xL4-24GB")
		low := e.submit("low", 1, func(j *models.Job) { j.PriorityClass = "test"; j.Preemptible = true })
		e.svc.Tick(e.ctx)
		e.mustReport(n, agentapi.AttemptRef{JobID: low.ID, Attempt: 1}, agentapi.EventStarted, nil)
		prod, err := st.PriorityClassByName(e.ctx, "production")
		if err != nil {
			t.Fatal(err)
		}
		prod.CanPreempt = false
		if err := st.SavePriorityClass(e.ctx, prod); err != nil {
			t.Fatal(err)
		}
		high := e.submit("high", 1, func(j *models.Job) { j.PriorityClass = "production" })
		e.svc.Tick(e.ctx)
		e.wantState(low.ID, models.JobRunning)
		e.wantState(high.ID, models.JobQueued)

		// The test class allows an hour; the low job has run for two.
		test, _ := st.PriorityClassByName(e.ctx, "test")
		test.MaxRunTimeSec = 3600
		if err := st.SavePriorityClass(e.ctx, test); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(2 * time.Hour)
		e.heartbeat(n)
		e.svc.Tick(e.ctx)
		failed := e.wantState(low.ID, models.JobFailed)
		evs, _ := st.JobEvents(e.ctx, low.ID)
		if last := evs[len(evs)-1]; failed.StateReason != "max-run-time" || !strings.Contains(last.Message, "ran longer than the 1h0m0s that class test allows") {
			t.Fatalf("overrun job: %s, event %+v", failed.StateReason, last)
		}
	})
}
