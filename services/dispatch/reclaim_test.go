package dispatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A spot notice drains the node at once and asks every job there to checkpoint
// within the notice (less the kill grace); the job goes back to the queue without
// spending a retry, even when the machine vanishes before its agent reports.
func TestReclaimCheckpointsWithinTheNotice(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("spot-1", "2xL4-24GB")
		a := e.submit("a", 1)
		b := e.submit("b", 1)
		e.svc.Tick(e.ctx)
		for _, j := range []*models.Job{a, b} {
			e.mustReport(n, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)
		}
		// The research class's grace is 5 minutes; the notice leaves two.
		deadline := time.Now().UTC().Add(2 * time.Minute)
		if err := e.svc.Reclaim(e.ctx, "spot-1", deadline, "AWS spot instance-action terminate"); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.Reclaim(e.ctx, "spot-1", deadline, "again"); err != nil {
			t.Fatal(err)
		}
		node, _ := st.NodeByName(e.ctx, "spot-1")
		if node.State != models.NodeDraining || !strings.Contains(node.StateReason, "AWS spot") {
			t.Fatalf("node %s (%s), want draining for the notice", node.State, node.StateReason)
		}
		ls := e.leases(n).Allocations
		if len(ls) != 2 {
			t.Fatalf("leases %+v", ls)
		}
		for _, l := range ls {
			if l.Stop == nil || l.Stop.Reason != agentapi.StopReclaim {
				t.Fatalf("lease %+v: want a reclaim stop", l)
			}
			// 120 s less the 10 s kill grace, counted from when the stop was asked.
			if g := time.Duration(l.Stop.GraceMS) * time.Millisecond; g > 110*time.Second || g < 100*time.Second {
				t.Fatalf("grace %s: want about 110 s, within the notice", g)
			}
		}
		if v1, v2 := e.leases(n).Version, e.leases(n).Version; v1 != v2 {
			t.Fatal("the lease version changes from poll to poll")
		}
		e.wantState(a.ID, models.JobPreempting)
		e.mustReport(n, agentapi.AttemptRef{JobID: a.ID, Attempt: 1}, agentapi.EventExited, code(0))
		if got := e.wantState(a.ID, models.JobQueued); got.Retries != 0 || got.StateReason != "reclaimed" {
			t.Fatalf("job a: retries %d reason %q", got.Retries, got.StateReason)
		}
		// b's machine goes before its agent reports: lost, yet requeued as reclaimed.
		e.clock.advance(testConfig.NodeTimeout + time.Second)
		e.svc.Tick(e.ctx)
		if got := e.wantState(b.ID, models.JobQueued); got.Retries != 0 || got.StateReason != "reclaimed" {
			t.Fatalf("job b: retries %d reason %q", got.Retries, got.StateReason)
		}
		count := 0
		for _, act := range e.auditActions() {
			if act == "node.reclaimed" {
				count++
			}
		}
		if count != 1 {
			t.Fatalf("node.reclaimed audited %d times, want 1", count)
		}
	})
}

// The agent reports a notice it read from the instance metadata in its heartbeat.
func TestHeartbeatCarriesAnInterruption(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("spot-1", "1xL4-24GB")
		j := e.submit("a", 1)
		e.svc.Tick(e.ctx)
		e.mustReport(n, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)
		fresh, _ := e.svc.Authenticate(e.ctx, n.credential)
		bad := agentapi.HeartbeatRequest{Interruption: &agentapi.Interruption{Reason: "no deadline"}}
		if _, err := e.svc.Heartbeat(e.ctx, fresh, bad); err == nil || !strings.Contains(err.Error(), "interruption.deadline") {
			t.Fatalf("a notice without a deadline: %v", err)
		}
		res, err := e.svc.Heartbeat(e.ctx, fresh, agentapi.HeartbeatRequest{Interruption: &agentapi.Interruption{
			Deadline: time.Now().Add(30 * time.Second), Reason: "GCP instance preempted"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.NodeState != models.NodeDraining || !strings.Contains(res.NodeStateReason, "GCP instance preempted") {
			t.Fatalf("heartbeat answer %+v", res)
		}
		e.wantState(j.ID, models.JobPreempting)
		if l := e.leases(n).Allocations; len(l) != 1 || l[0].Stop == nil || l[0].Stop.GraceMS > 20_000 {
			t.Fatalf("lease %+v: want a stop with at most 30 s less the 10 s kill grace", l)
		}
	})
}
