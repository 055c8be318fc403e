package accounting_test

import (
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// An hour's estimate is what metering charges for that hour of the same allocation, and
// says what it could not price.
func TestEstimateIsWhatMeteringCharges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		w.node("a", "ondemand", "A100-80GB", 2, nil)
		w.rate(models.CostRate{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: 3_210_000, EffectiveFrom: t0})
		w.rate(models.CostRate{Resource: "cpu", RateMicros: 41_000, EffectiveFrom: t0})
		w.rate(models.CostRate{Resource: "ram", RateMicros: 5_000, EffectiveFrom: t0})
		w.rate(models.CostRate{Resource: "license", Unit: "job-hour", ImageID: &w.images["matlab"].ID, RateMicros: 1_500_000, EffectiveFrom: t0})
		j := w.job("train", "ada", "detect", "matlab")
		w.alloc(j, "a", `[{"uuid":"a-0","milli":1000},{"uuid":"a-1","milli":250}]`, 6000, 24576, 0, at(1, 0), tp(at(2, 0)))
		w.meter(at(3, 0))
		var charged int64
		for _, v := range w.jobCost(j) {
			charged += v
		}
		rows, until, err := w.acc.JobCost(w.ctx, j, at(3, 0))
		if err != nil {
			t.Fatal(err)
		}
		var listed int64
		for _, r := range rows {
			listed += r.AmountMicros
		}
		if listed != charged || len(rows) != 4 || rows[0].Label != "gpu" || !until.Equal(at(3, 0)) {
			t.Fatalf("JobCost = %+v metered until %s; the ledger charged %d", rows, until, charged)
		}
		prices, err := w.acc.PriceList(w.ctx, at(1, 30))
		if err != nil {
			t.Fatal(err)
		}
		e := prices.Hourly(accounting.Running{GPUModel: "A100-80GB", GPUMilli: 1250, CPUMilli: 6000, MemoryMiB: 24576, Replicas: 1, ImageID: &w.images["matlab"].ID})
		// 1.25 × 3.21 + 6 × 0.041 + 24 × 0.005 + 1.5
		if want := int64(4_012_500 + 246_000 + 120_000 + 1_500_000); e.PerHourMicros != want || charged != want || len(e.Unpriced) != 0 {
			t.Fatalf("estimate %+v, metering charged %d; want both %d", e, charged, want)
		}
		if p, ok := prices.GPUHour("A100-80GB"); !ok || p != 3_210_000 {
			t.Errorf("GPU-hour of an A100 = %d, %v", p, ok)
		}
		if _, ok := prices.GPUHour("L4-24GB"); ok {
			t.Error("an L4 has a price though no rate names it")
		}
		// Three compute slices of seven, and scratch with no rate.
		e = prices.Hourly(accounting.Running{GPUModel: "A100-80GB", MIGSlices: 3, ScratchMiB: 1024})
		if e.PerHourMicros != 1_375_714 || len(e.Unpriced) != 1 || e.Unpriced[0] != "scratch" {
			t.Fatalf("estimate of a 3g slice with scratch = %+v", e)
		}
		before, err := w.acc.PriceList(w.ctx, t0.Add(-1))
		if err != nil {
			t.Fatal(err)
		}
		if e := before.Hourly(accounting.Running{GPUModel: "A100-80GB", GPUMilli: 1000}); e.PerHourMicros != 0 || len(e.Unpriced) != 1 {
			t.Fatalf("estimate before any rate took effect = %+v", e)
		}
	})
}
