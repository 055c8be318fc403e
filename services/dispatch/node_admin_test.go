package dispatch_test

import (
	"errors"
	"strings"
	"testing"

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
