package accounting_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// history is the known history of the metering tests (times from t0, a Monday 00:00 UTC):
//
//	rates  A100-80GB 7.00/GPU-hour, 14.00 from 03:00; L4-24GB spot 1.20 (on-demand 2.00,
//	       which the spot pool must not pay); CPU 0.04/core-hour; RAM 0.005/GiB-hour;
//	       scratch 0.10/GiB-month; matlab licence 1.00/job-hour
//	nodes  a100 (on-demand pool): two A100-80GB, GPU 1 in MIG mode with a 3g.40gb slice;
//	       l4 (spot pool): one L4-24GB
//	train  ada/detect   a100 GPU 0 whole, 4 cores, 16 GiB       00:00-01:30
//	asr    bob/speech   a100 MIG 3g.40gb (3/7 of the card)      00:00-running
//	sweep  ada/detect   a100 GPU 0 at 0.25, image matlab        02:00-03:30
//	align  bob/speech   l4 whole, 100 GiB scratch               01:00-02:00
type history struct {
	*world
	train, asr, sweep, align *models.Job
}

func newHistory(t *testing.T, s *store.Store) *history {
	w := newWorld(t, s)
	before := t0.Add(-24 * time.Hour)
	w.rate(models.CostRate{Resource: models.ResourceGPU, GPUModel: "A100-80GB", RateMicros: 7_000_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceGPU, GPUModel: "A100-80GB", RateMicros: 14_000_000, EffectiveFrom: at(3, 0)})
	w.rate(models.CostRate{Resource: models.ResourceGPU, GPUModel: "L4-24GB", CapacityType: models.CapacitySpot, RateMicros: 1_200_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceGPU, GPUModel: "L4-24GB", CapacityType: models.CapacityOnDemand, RateMicros: 2_000_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceCPU, RateMicros: 40_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceRAM, RateMicros: 5_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceScratch, RateMicros: 100_000, EffectiveFrom: before})
	w.rate(models.CostRate{Resource: models.ResourceLicense, ImageID: &w.images["matlab"].ID, Unit: "job-hour", RateMicros: 1_000_000, EffectiveFrom: before})

	w.node("a100", "ondemand", "A100-80GB", 2, map[int][]models.GPUSlice{
		1: {{UUID: "MIG-a100-1-3g", Profile: "3g.40gb", MemoryMiB: 40192, ComputeSlices: 3}},
	})
	w.node("l4", "spot", "L4-24GB", 1, nil)

	h := &history{world: w}
	h.train = w.job("train", "ada", "detect", "")
	w.alloc(h.train, "a100", `[{"uuid":"a100-0","milli":1000}]`, 4000, 16384, 0, at(0, 0), tp(at(1, 30)))
	h.asr = w.job("asr", "bob", "speech", "")
	w.alloc(h.asr, "a100", `[{"uuid":"MIG-a100-1-3g","milli":0,"mig_profile":"3g.40gb"}]`, 0, 0, 0, at(0, 0), nil)
	h.sweep = w.job("sweep", "ada", "detect", "matlab")
	w.alloc(h.sweep, "a100", `[{"uuid":"a100-0","milli":250}]`, 0, 0, 0, at(2, 0), tp(at(3, 30)))
	h.align = w.job("align", "bob", "speech", "")
	w.alloc(h.align, "l4", `[{"uuid":"l4-0","milli":1000}]`, 0, 0, 102400, at(1, 0), tp(at(2, 0)))
	return h
}

// The amounts of the history metered to 04:10, worked out by hand (see history).
var wantJobs = map[string]map[string]int64{
	// GPU 1.5 h x 7.00; 4 cores x 1.5 h x 0.04; 16 GiB x 1.5 h x 0.005.
	"train": {"gpu": 10_500_000, "cpu": 240_000, "ram": 120_000},
	// 3/7 of (3 h x 7.00 + 1 h x 14.00), charged to 04:00, the last whole interval.
	"asr": {"gpu": 15_000_000},
	// 0.25 x (1 h x 7.00 + 0.5 h x 14.00); licence 1.5 job-hours x 1.00.
	"sweep": {"gpu": 3_500_000, "license": 1_500_000},
	// 1 h x 1.20 (spot); 100 GiB x 1 h / 730 h x 0.10 = 0.0136986… rounds to 13699 micros.
	"align": {"gpu": 1_200_000, "scratch": 13_699},
}

const (
	// Two A100 x (3 h x 7.00 + 1 h x 14.00) + one L4 x 4 h x 1.20, 00:00-04:00.
	wantFleet = 74_800_000
	// The fleet minus job GPU charges (10.50 + 15.00 + 3.50 + 1.20).
	wantUnallocated = 44_600_000
)

func (h *history) checkAmounts(t *testing.T) {
	t.Helper()
	for name, j := range map[string]*models.Job{"train": h.train, "asr": h.asr, "sweep": h.sweep, "align": h.align} {
		got := h.jobCost(j)
		if len(got) != len(wantJobs[name]) {
			t.Errorf("%s charged %v, want %v", name, got, wantJobs[name])
			continue
		}
		for res, want := range wantJobs[name] {
			if got[res] != want {
				t.Errorf("%s %s = %d micros, want %d", name, res, got[res], want)
			}
		}
	}
	day := store.RollupQuery{From: t0, To: t0.AddDate(0, 0, 1), Resources: []string{models.ResourceGPU}}
	day.By = store.ByJob
	byJob := h.sums(day)
	if byJob["0"] != wantUnallocated {
		t.Errorf("unallocated = %d, want %d", byJob["0"], wantUnallocated)
	}
	var total int64
	for _, v := range byJob {
		total += v
	}
	fleet, err := h.acc.FleetCost(h.ctx, t0, at(4, 0))
	if err != nil {
		t.Fatal(err)
	}
	// The identity: every GPU charge plus unallocated is the cost of the fleet, exactly.
	if total != wantFleet || fleet != wantFleet {
		t.Errorf("GPU charges + unallocated = %d, fleet cost = %d, want both %d", total, fleet, wantFleet)
	}
	day.By, day.Resources = store.ByTeam, nil
	day.ChargedOnly = true
	byTeam := h.sums(day)
	vision, audio := h.teams["vision"].ID, h.teams["audio"].ID
	if byTeam[itoa(vision)] != 15_860_000 || byTeam[itoa(audio)] != 16_213_699 {
		t.Errorf("by team = %v, want vision 15860000 and audio 16213699", byTeam)
	}
}

// However often metering runs, the history costs the same, to the micro-unit.
func TestMeterChargesKnownHistoryExactly(t *testing.T) {
	t.Parallel()
	schedules := []struct {
		name  string
		times []time.Time
	}{
		{"once", []time.Time{at(4, 10)}},
		{"staged", []time.Time{at(1, 45), at(1, 45), at(4, 10)}},
		{"every 20m", []time.Time{at(0, 20), at(0, 40), at(1, 0), at(1, 20), at(1, 40), at(2, 0), at(2, 20), at(2, 40), at(3, 0), at(3, 20), at(3, 40), at(4, 0), at(4, 10)}},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for i, sched := range schedules {
			t.Run(sched.name, func(t *testing.T) {
				if i == 2 && s.Dialect() != "sqlite" {
					t.Skip("SKIP: the 20-minute schedule exercises metering logic, not the database; SQLite runs it")
				}
				st := s
				if i > 0 {
					st = fresh(t, s)
				}
				h := newHistory(t, st)
				for _, until := range sched.times {
					h.meter(until)
				}
				h.checkAmounts(t)
				if again := h.meter(at(4, 10)); again.Entries != 0 {
					t.Errorf("metering to the same point again added %d entries", again.Entries)
				}
			})
		}
	})
}

// An allocation reported after its interval was closed is still charged, and a negative
// unallocated entry beside it keeps the fleet total exact; nothing is rewritten.
func TestMeterChargesLateAllocationWithCorrection(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		h.meter(at(4, 10))
		late := h.job("late", "bob", "speech", "")
		h.alloc(late, "l4", `[{"uuid":"l4-0"}]`, 0, 0, 0, at(0, 30), tp(at(1, 0)))
		rep := h.meter(at(4, 20))
		if rep.ChargedMicros != 600_000 || rep.UnallocatedMicros != -600_000 {
			t.Errorf("late metering charged %d and unallocated %d, want 600000 and -600000", rep.ChargedMicros, rep.UnallocatedMicros)
		}
		if got := h.jobCost(late); got["gpu"] != 600_000 {
			t.Errorf("late job charged %v, want gpu 600000 (0.5 h x 1.20)", got)
		}
		q := store.RollupQuery{By: store.ByJob, From: t0, To: t0.AddDate(0, 0, 1), Resources: []string{models.ResourceGPU}}
		var total int64
		for _, v := range h.sums(q) {
			total += v
		}
		if total != wantFleet {
			t.Errorf("GPU charges + unallocated after a late report = %d, want %d", total, wantFleet)
		}
	})
}

// Usage with no rate in effect, or on devices nobody registered, is reported, not guessed.
func TestMeterReportsWhatItCannotPrice(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		h.node("t4", "", "T4-16GB", 1, nil)
		ghost := h.job("ghost", "ada", "detect", "")
		h.alloc(ghost, "a100", `[{"uuid":"GPU-nope"}]`, 0, 0, 0, at(0, 0), tp(at(1, 0)))
		bad := h.job("bad", "ada", "detect", "")
		h.alloc(bad, "a100", `{"uuid":1}`, 0, 0, 0, at(0, 0), tp(at(1, 0)))
		rep := h.meter(at(4, 10))
		for _, want := range []string{"no rate in effect for gpu T4-16GB", "GPU GPU-nope is not registered", "devices are not a JSON list"} {
			if !strings.Contains(strings.Join(rep.Problems, "\n"), want) {
				t.Errorf("problems %q lack %q", rep.Problems, want)
			}
		}
		if got := h.jobCost(ghost); len(got) != 0 {
			t.Errorf("job on an unknown GPU charged %v", got)
		}
		h.checkAmounts(t)
	})
}

// Replicas that meter at the same moment queue on the metering lock: nothing is charged twice.
func TestConcurrentMeteringChargesOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := h.acc.Meter(h.ctx, at(4, 10))
				errs <- err
			}()
		}
		for range 4 {
			must(t, <-errs)
		}
		h.checkAmounts(t)
	})
}

// The metering loop charges an allocation to its end as soon as it is told one ended,
// without waiting for its next round (an hour here).
func TestRunMeteringChargesEndedAllocationsAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		ctx, cancel := context.WithCancel(h.ctx)
		ended := make(chan struct{}, 1)
		stopped := make(chan struct{})
		defer func() { cancel(); <-stopped }()
		go func() {
			defer close(stopped)
			h.acc.RunMetering(ctx, func() time.Time { return at(4, 10) }, time.Hour, ended, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		// The loop writes while the test reads, so read the daily ledger alone until done.
		gpu := func() int64 {
			rows, err := s.CostRollup(h.ctx, store.RollupQuery{By: store.ByResource, From: t0, To: t0.AddDate(0, 0, 1), JobIDs: []int64{h.asr.ID}})
			must(t, err)
			var sum int64
			for _, r := range rows {
				if r.Name == models.ResourceGPU {
					sum += r.AmountMicros
				}
			}
			return sum
		}
		// 3/7 of (3 h x 7.00 + 1 h x 14.00) to 04:00 while it runs; 3/7 x 0.1 h x 14.00 more once it ended at 04:06.
		waitFor(t, func() bool { return gpu() == 15_000_000 })
		a, err := s.AllocationByAttempt(h.ctx, h.asr.ID, 1, 0)
		must(t, err)
		must(t, s.UpdateAllocation(h.ctx, a.ID, []string{models.AllocRunning}, store.AllocationChange{State: models.AllocEnded, EndedAt: tp(at(4, 6))}))
		ended <- struct{}{}
		waitFor(t, func() bool { return gpu() == 15_600_000 })
		cancel()
		<-stopped
		if got := h.jobCost(h.asr); got["gpu"] != 15_600_000 || len(got) != 1 {
			t.Errorf("asr charged %v, want gpu 15600000", got)
		}
	})
}

// waitFor polls cond until it holds, failing after ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}
