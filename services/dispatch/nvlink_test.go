package dispatch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A job that requires NVLink is stored so, runs only on cards joined by it (not on the
// PCIe node that joined first), waits saying so where no such cards are, and is refused
// at submission where no node of its model has them.
func TestNVLinkRequiredThroughDispatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		pcie := e.join("gpu-pcie", "2xL4-24GB")
		sxm := e.join("gpu-sxm", "2xA100-80GB")
		linked := e.submit("linked", 2, func(j *models.Job) { j.NVLink = true })
		l4 := e.submit("l4-linked", 2, func(j *models.Job) { j.NVLink, j.GPUModel = true, "L4-24GB" })
		if got, err := st.JobByID(e.ctx, linked.ID); err != nil || !got.NVLink {
			t.Fatalf("stored job = %+v, %v; want nvlink", got, err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(linked.ID, models.JobScheduled)
		if l := e.leases(sxm).Allocations; len(l) != 1 || l[0].JobID != linked.ID {
			t.Errorf("leases of the NVLink node = %+v, want the linked job", l)
		}
		if l := e.leases(pcie).Allocations; len(l) != 0 {
			t.Errorf("the PCIe node got %+v", l)
		}
		if w := e.wantState(l4.ID, models.JobQueued); !strings.Contains(w.PendingReason, "joined by NVLink") {
			t.Errorf("the L4 pair waits saying %q, want NVLink named", w.PendingReason)
		}
		var fe *models.FieldError
		err := e.svc.CheckFit(e.ctx, *l4, nil)
		if !errors.As(err, &fe) || fe.Field != "resources.nvlink" {
			t.Errorf("fit of 2 L4 GPUs joined by NVLink: %v, want a refusal on resources.nvlink", err)
		}
		if err := e.svc.CheckFit(e.ctx, *linked, nil); err != nil {
			t.Errorf("fit of 2 GPUs joined by NVLink: %v", err)
		}
	})
}
