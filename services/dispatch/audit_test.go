package dispatch_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// jobAudit lists the audit events about job id after event after, as "action by actor (reason)".
func (e *env) jobAudit(after int64, id int64) []string {
	e.t.Helper()
	evs, err := e.st.AuditEventsAfter(e.ctx, store.AuditFilter{}, after, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.ObjectType == "job" && ev.ObjectID == fmt.Sprint(id) {
			out = append(out, ev.Action+" by "+ev.Actor)
		}
	}
	return out
}

// What Gantry decides by itself about a job is audited with the change: each
// placement, what becomes of the job when an attempt ended (on the word of the node
// that reported it, or of the system when the node was lost), and a stop at a drain's
// deadline. The attempt's own start, which only its agent reports, is not an action.
func TestSystemDecisionsAboutJobsAreAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xL4-24GB")

		flaky := e.submit("flaky", 1, func(j *models.Job) { j.MaxRetries = 1 })
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: flaky.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		e.mustReport(n, ref, agentapi.EventExited, code(3))
		e.svc.Tick(e.ctx)
		e.mustReport(n, agentapi.AttemptRef{JobID: flaky.ID, Attempt: 2}, agentapi.EventStarted, nil)
		e.clock.advance(31 * time.Second) // the node goes silent: lost, and the job has no retry left
		e.svc.Tick(e.ctx)
		e.wantState(flaky.ID, models.JobFailed)
		want := []string{"job.scheduled by system", "job.requeued by gpu-1", "job.scheduled by system", "job.failed by system"}
		if got := e.jobAudit(0, flaky.ID); !slices.Equal(got, want) {
			t.Errorf("audit of the flaky job = %v, want %v", got, want)
		}

		e.heartbeat(n)
		ok := e.submit("ok", 1)
		e.svc.Tick(e.ctx)
		ref = agentapi.AttemptRef{JobID: ok.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		if got, want := e.jobAudit(0, ok.ID), []string{"job.scheduled by system", "job.succeeded by gpu-1"}; !slices.Equal(got, want) {
			t.Errorf("audit of the job that succeeded = %v, want %v", got, want)
		}

		long := e.submit("long", 1)
		e.svc.Tick(e.ctx)
		ref = agentapi.AttemptRef{JobID: long.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		if _, err := e.svc.SetNodeState(e.ctx, "gpu-1", models.NodeDraining, "kernel update", e.clock.now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(61 * time.Second)
		e.heartbeat(n)
		e.svc.Tick(e.ctx)
		e.svc.Tick(e.ctx) // a second pass past the deadline stops nothing again
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		e.wantState(long.ID, models.JobQueued)
		if got, want := e.jobAudit(0, long.ID), []string{"job.scheduled by system", "job.stopped by system", "job.requeued by gpu-1"}; !slices.Equal(got, want) {
			t.Errorf("audit of the job stopped by a drain = %v, want %v", got, want)
		}
		if r, err := e.audit.Verify(e.ctx); err != nil || r.Events == 0 {
			t.Fatalf("verify: %+v %v", r, err)
		}
	})
}
