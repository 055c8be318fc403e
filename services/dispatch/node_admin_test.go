package dispatch_test

import (
	"errors"
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

func fieldOf(err error) string {
	var fe *models.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// Labels and pools of a node change through the service, checked and audited; removing
// a node is refused while it runs work, and afterwards its agent is refused.
func TestNodeAdministration(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		if _, err := e.svc.SetNodeLabels(e.ctx, "gpu-1", map[string]string{"rack": "r1", "bad key!": "x"}); fieldOf(err) != "labels" {
			t.Errorf("a bad label key: %v", err)
		}
		if _, err := e.svc.SetNodeLabels(e.ctx, "gpu-1", map[string]string{"rack": "r1", "zone": "eu-west-1a"}); err != nil {
			t.Fatal(err)
		}
		if fresh, _ := st.NodeByName(e.ctx, "gpu-1"); fresh.Labels != `{"rack":"r1","zone":"eu-west-1a"}` {
			t.Errorf("labels = %s", fresh.Labels)
		}
		if _, err := e.svc.SetNodeLabels(e.ctx, "nope", nil); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("labels of a missing node: %v", err)
		}
		if _, err := e.svc.SetNodePool(e.ctx, "gpu-1", "ghosts"); fieldOf(err) != "pool" {
			t.Errorf("a missing pool: %v", err)
		}
		pool := &models.NodePool{Name: "onprem", Provider: "static", CapacityType: models.CapacityOwned, Template: "{}", ProviderConfig: "{}"}
		if err := st.CreateNodePool(e.ctx, pool); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.SetNodePool(e.ctx, "gpu-1", "onprem"); err != nil {
			t.Fatal(err)
		}
		if fresh, _ := st.NodeByName(e.ctx, "gpu-1"); fresh.PoolID == nil || *fresh.PoolID != pool.ID {
			t.Errorf("pool = %v", fresh.PoolID)
		}

		job := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		e.wantState(job.ID, models.JobScheduled)
		if _, err := e.svc.RemoveNode(e.ctx, "gpu-1", "decommissioned"); fieldOf(err) != "node" || !strings.Contains(err.Error(), "drain it first") {
			t.Fatalf("removing a busy node: %v", err)
		}
		e.mustReport(n, agentapi.AttemptRef{JobID: job.ID, Attempt: 1}, agentapi.EventStarted, nil)
		e.mustReport(n, agentapi.AttemptRef{JobID: job.ID, Attempt: 1}, agentapi.EventExited, code(0))
		if _, err := e.svc.RemoveNode(e.ctx, "gpu-1", "decommissioned"); err != nil {
			t.Fatal(err)
		}
		if fresh, _ := st.NodeByName(e.ctx, "gpu-1"); fresh.State != models.NodeDown || fresh.StateReason != "decommissioned" {
			t.Errorf("removed node is %s (%s)", fresh.State, fresh.StateReason)
		}
		if _, err := e.svc.Authenticate(e.ctx, n.credential); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Errorf("the removed node's agent: %v, want refused", err)
		}
		acts := strings.Join(e.auditActions(), ",")
		for _, a := range []string{"node.labels_changed", "node.pool_changed", "node.removed"} {
			if !strings.Contains(acts, a) {
				t.Errorf("audit lacks %s: %s", a, acts)
			}
		}
	})
}

// A removed node is out of service for good: it cannot be returned to service or
// removed again, the scheduler and the submission check leave it out, and only its
// agent joining again with a new join token brings it back, unmarked.
func TestRemovedNodeComesBackOnlyByJoiningAgain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		e.join("small", "1xL4-24GB")
		big := e.join("big", "4xL4-24GB")
		removedAt := e.clock.now()
		if _, err := e.svc.RemoveNode(e.ctx, "big", "decommissioned"); err != nil {
			t.Fatal(err)
		}
		n, _ := st.NodeByName(e.ctx, "big")
		if n.RemovedAt == nil || !n.RemovedAt.Equal(removedAt) || n.State != models.NodeDown {
			t.Fatalf("the removed node is %s, removed at %v; want down, removed at %s", n.State, n.RemovedAt, removedAt)
		}
		e.clock.advance(time.Hour)
		if _, err := e.svc.RemoveNode(e.ctx, "big", "again"); fieldOf(err) != "node" || !strings.Contains(err.Error(), "was removed on "+removedAt.Format(time.DateTime)) {
			t.Errorf("removing it again: %v", err)
		}
		if _, err := e.svc.SetNodeState(e.ctx, "big", models.NodeReady, "back", time.Time{}); fieldOf(err) != "state" || !strings.Contains(err.Error(), "joins again with a new join token") {
			t.Errorf("returning a removed node to service: %v", err)
		}
		if n, _ := st.NodeByName(e.ctx, "big"); n.State != models.NodeDown || n.StateReason != "decommissioned" || !n.RemovedAt.Equal(removedAt) {
			t.Errorf("refused changes left it %s (%s), removed at %v", n.State, n.StateReason, n.RemovedAt)
		}
		four := models.Job{Name: "wide", GPUs: 4, CPUMilli: 1000, MemoryMiB: 1024, PriorityClass: "research", Replicas: 1}
		if err := e.svc.CheckFit(e.ctx, four, nil); fieldOf(err) != "resources.gpus" {
			t.Errorf("a job only the removed node could hold: %v, want refused on resources.gpus", err)
		}
		job := e.submit("wide", 4)
		e.svc.Tick(e.ctx)
		e.wantState(job.ID, models.JobQueued)

		again := e.join("big", "4xL4-24GB")
		if again.Node.ID != big.Node.ID {
			t.Fatalf("joining again made node %d, want the old record %d", again.Node.ID, big.Node.ID)
		}
		n, _ = st.NodeByName(e.ctx, "big")
		if n.RemovedAt != nil || n.State != models.NodeReady {
			t.Fatalf("after joining again the node is %s, removed at %v; want ready and not removed", n.State, n.RemovedAt)
		}
		if err := e.svc.CheckFit(e.ctx, four, nil); err != nil {
			t.Errorf("after it joined again: %v, want the job to fit", err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(job.ID, models.JobScheduled)
		evs, err := st.AuditEventsAfter(e.ctx, store.AuditFilter{}, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var rejoined string
		for _, ev := range evs {
			if ev.Action == "node.rejoined" && ev.ObjectID == "big" {
				rejoined = ev.Detail
			}
		}
		if !strings.Contains(rejoined, `"removed_at"`) {
			t.Errorf("the join again is audited as node.rejoined %q, want it to say when the node was removed", rejoined)
		}
	})
}
