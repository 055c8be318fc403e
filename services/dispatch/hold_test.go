package dispatch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
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
		if _, err := e.svc.HoldJob(e.ctx, j.ID, "user:ada", ""); !errors.Is(err, dispatch.ErrWrongState) {
			t.Fatalf("hold of a scheduled job: %v, want ErrWrongState", err)
		}
		evs, err := st.JobEvents(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, ev := range evs {
			seen = append(seen, ev.ToState+"/"+ev.Reason+"/"+ev.Actor)
		}
		want := []string{"queued/submitted/user:ada", "held/held/user:ada", "queued/released/user:bob", "scheduled/scheduled/scheduler"}
		if !slices.Equal(seen, want) {
			t.Fatalf("events = %v, want %v", seen, want)
		}
		if acts := e.auditActions(); !slices.Contains(acts, "job.held") || !slices.Contains(acts, "job.released") {
			t.Fatalf("audit = %v", acts)
		}
	})
}
