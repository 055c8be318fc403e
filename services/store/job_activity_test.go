package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A job's activity changes with each thing its page shows beyond the job's row: an
// event, an allocation (placed, started, stopping, moved, ended), a charge, the metering
// watermark, the first cost rate set and the last deleted; and with nothing else,
// another job's doings and the rates between the first and the last included.
func TestJobActivity(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		other := &models.Job{Name: "other", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		for _, job := range []*models.Job{j, other} {
			if err := s.CreateJob(ctx, job, "user:ada"); err != nil {
				t.Fatal(err)
			}
		}
		n1, n2 := &models.Node{Name: "gpu-1", State: models.NodeReady}, &models.Node{Name: "gpu-2", State: models.NodeReady}
		for _, n := range []*models.Node{n1, n2} {
			if err := s.SaveNode(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		last, err := s.JobActivity(ctx, j.ID)
		if err != nil || last == "" {
			t.Fatalf("JobActivity = %q, %v", last, err)
		}
		// step makes a change and checks whether the activity changed with it.
		step := func(what string, changes bool, change func() error) {
			t.Helper()
			if err := change(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			now, err := s.JobActivity(ctx, j.ID)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if changes && now == last {
				t.Errorf("%s: the activity did not change", what)
			}
			if !changes && now != last {
				t.Errorf("%s: the activity changed", what)
			}
			last = now
		}
		nothing := func() error { return nil }
		step("nothing", false, nothing)
		step("a pending reason (the job's row)", false, func() error { return s.SetPendingReason(ctx, j.ID, "no free A100") })
		step("another job's event", false, func() error { return s.NoteJob(ctx, other.ID, models.JobQueued, "note", "elsewhere", "system") })
		step("an event", true, func() error { return s.NoteJob(ctx, j.ID, models.JobQueued, "note", "Slurm says it waits", "system") })
		step("another job's allocation", false, func() error {
			return s.CreateAllocations(ctx, []models.Allocation{{JobID: other.ID, Attempt: 1, NodeID: n1.ID, State: models.AllocPending}})
		})
		step("an allocation", true, func() error {
			return s.CreateAllocations(ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: n1.ID, State: models.AllocPending}})
		})
		a, err := s.AllocationByAttempt(ctx, j.ID, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		step("the allocation moved", true, func() error { return s.MoveAllocation(ctx, a.ID, n2.ID, `[{"uuid":"GPU-b","milli":1000}]`, 1000) })
		start := time.Now().UTC()
		step("the allocation started", true, func() error {
			return s.UpdateAllocation(ctx, a.ID, []string{models.AllocPending}, store.AllocationChange{State: models.AllocRunning, StartedAt: &start})
		})
		reason := "preempted"
		step("the allocation stopping", true, func() error {
			return s.UpdateAllocation(ctx, a.ID, []string{models.AllocRunning}, store.AllocationChange{State: models.AllocStopping, StopReason: &reason})
		})
		step("its checkpoint saved (not shown)", false, func() error {
			_, err := s.MarkCheckpointSaved(ctx, a.ID, start)
			return err
		})
		code := 0
		step("the allocation ended", true, func() error {
			return s.UpdateAllocation(ctx, a.ID, []string{models.AllocStopping}, store.AllocationChange{State: models.AllocEnded, ExitCode: &code, EndedAt: &start})
		})
		charge := func(job int64) func() error {
			return func() error {
				return s.AppendLedgerEntries(ctx, []models.LedgerEntry{{JobID: &job, Attempt: 1, AllocationID: &a.ID, UserID: &u.ID, ProjectID: &p.ID,
					TeamID: &p.TeamID, Resource: "gpu", QuantityMilli: 1000, RateMicros: 2_000_000, AmountMicros: 2_000_000,
					PeriodStart: start.Truncate(time.Minute), PeriodEnd: start.Truncate(time.Minute).Add(time.Minute)}})
			}
		}
		step("another job's charge", false, charge(other.ID))
		step("a charge", true, charge(j.ID))
		step("the metering watermark", true, func() error {
			return s.InTx(ctx, func(tx *store.Store) error {
				if _, _, err := tx.LockMetering(ctx); err != nil {
					return err
				}
				return tx.SetMeteredUntil(ctx, start.Truncate(time.Minute))
			})
		})
		rate := func(resource string) *models.CostRate {
			return &models.CostRate{Resource: resource, Unit: "gpu-hour", RateMicros: 1_000_000, EffectiveFrom: start.Add(time.Hour)}
		}
		first, second := rate("gpu"), rate("cpu")
		step("the first cost rate", true, func() error { return s.CreateCostRate(ctx, first) })
		step("a second cost rate", false, func() error { return s.CreateCostRate(ctx, second) })
		step("one of two rates deleted", false, func() error { return s.DeleteCostRate(ctx, second.ID, start) })
		step("the last rate deleted", true, func() error { return s.DeleteCostRate(ctx, first.ID, start) })
		step("nothing again", false, nothing)
	})
}
