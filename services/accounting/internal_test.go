package accounting

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

var day0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func hr(h float64) time.Time { return day0.Add(time.Duration(h * float64(time.Hour))) }

func TestRateBookPrefersTheMostSpecificKeyInEffect(t *testing.T) {
	t.Parallel()
	pool := int64(7)
	book := newRateBook([]models.CostRate{
		{ID: 1, Resource: "gpu", RateMicros: 1, EffectiveFrom: hr(0)},                                              // any GPU
		{ID: 2, Resource: "gpu", CapacityType: "spot", RateMicros: 2, EffectiveFrom: hr(0)},                        // any spot GPU
		{ID: 3, Resource: "gpu", GPUModel: "H100-80GB", RateMicros: 3, EffectiveFrom: hr(2)},                       // the model, from 02:00
		{ID: 4, Resource: "gpu", GPUModel: "H100-80GB", PoolID: &pool, RateMicros: 4, EffectiveFrom: hr(5)},        // the pool's own, from 05:00
		{ID: 5, Resource: "gpu", GPUModel: "H100-80GB", RateMicros: 5, EffectiveFrom: hr(4)},                       // the model's new price
		{ID: 6, Resource: "cpu", RateMicros: 6, EffectiveFrom: hr(0)},                                              // another resource
		{ID: 7, Resource: "gpu", GPUModel: "H100-80GB", CapacityType: "spot", RateMicros: 7, EffectiveFrom: hr(8)}, // model + spot
	})
	k := rateKey{resource: "gpu", gpuModel: "H100-80GB", poolID: pool, capacity: "spot"}
	got := ""
	for _, p := range book.pieces(k, hr(-1), hr(10)) {
		id := int64(0)
		if p.rate != nil {
			id = p.rate.ID
		}
		got += fmt.Sprintf("%s-%s:%d ", p.from.Format("15"), p.to.Format("15"), id)
	}
	// Before 00:00 nothing; then spot beats "any"; the model beats spot; its new price at
	// 04:00; the pool's own price from 05:00 beats the model with spot from 08:00 too.
	want := "23-00:0 00-02:2 02-04:3 04-05:5 05-10:4 "
	if got != want {
		t.Errorf("pieces = %q, want %q", got, want)
	}
	other := rateKey{resource: "gpu", gpuModel: "L4-24GB", capacity: "on-demand"}
	if r := book.at(candidates(other), hr(3)); r == nil || r.ID != 1 {
		t.Errorf("an on-demand L4 pays %+v, want the any-GPU rate 1", r)
	}
}

func TestDeviceSharesAreExactFractionsOfTheCard(t *testing.T) {
	t.Parallel()
	ix := newGPUIndex(
		[]models.GPUDevice{{ID: 1, NodeID: 1, UUID: "g0", Model: "A100-80GB"}, {ID: 2, NodeID: 1, UUID: "g1", Model: "A100-80GB"}, {ID: 3, NodeID: 2, UUID: "h0", Model: "H100-80GB"}},
		[]models.GPUSlice{{DeviceID: 2, UUID: "mig-3g", Profile: "3g.40gb", ComputeSlices: 3}},
	)
	cases := []struct {
		devices string
		want    string
	}{
		{`[{"uuid":"g0","milli":1000}]`, "[{A100-80GB 7000}]"},
		{`[{"uuid":"g0","milli":250}]`, "[{A100-80GB 1750}]"},                // a quarter
		{`[{"uuid":"mig-3g"}]`, "[{A100-80GB 3000}]"},                        // 3/7 by the slice table
		{`[{"uuid":"g0","mig_profile":"1c.3g.40gb"}]`, "[{A100-80GB 1000}]"}, // one compute slice
		{`[{"uuid":"g0"},{"uuid":"g1","milli":500}]`, "[{A100-80GB 10500}]"},
		{`[{"uuid":"h0"}]`, "[]"}, // on node 2, not this allocation's node
	}
	for _, c := range cases {
		got, _ := ix.shares(models.Allocation{ID: 9, NodeID: 1, Devices: c.devices})
		if fmt.Sprint(got) != c.want {
			t.Errorf("shares of %s = %v, want %s", c.devices, got, c.want)
		}
	}
	for profile, want := range map[string]int{"3g.40gb": 3, "7g.80gb": 7, "1c.3g.40gb": 1, "2c.4g.40gb": 2, "8g.1gb": 0, "g.1": 0, "": 0, "abc": 0} {
		if n, _ := migComputeSlices(profile); n != want {
			t.Errorf("compute slices of %q = %d, want %d", profile, n, want)
		}
	}
}

func TestMulDivRoundsWithoutOverflow(t *testing.T) {
	t.Parallel()
	// 1000.00 per GPU-hour x 16 whole cards x a day: past 2^63 before the division.
	got := mulDiv(1_000_000_000, 16*unitsPerGPU, 86_400, unitsPerGPU*3600)
	if got != 384_000_000_000 {
		t.Errorf("mulDiv = %d, want 384000000000", got)
	}
	if mulDiv(1, 1, 1, 2) != 1 || mulDiv(1, 1, 1, 3) != 0 || mulDiv(2, 1, 1, 3) != 1 {
		t.Error("mulDiv must round half up")
	}
}

// With awkward shares and prices, each job pays its exact share to within rounding, and
// jobs plus unallocated equal the fleet's cost in every slot, to the micro-unit.
func TestChargesAndUnallocatedAddUpForAnyShares(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		rate := rng.Int64N(20_000_000) + 1
		node := models.Node{ID: 1, CreatedAt: hr(0)}
		devices := []models.GPUDevice{{ID: 1, NodeID: 1, UUID: "g0", Model: "A100-80GB"}, {ID: 2, NodeID: 1, UUID: "g1", Model: "A100-80GB"}}
		run := newMeterRun(15*time.Minute, []models.CostRate{{ID: 1, Resource: "gpu", RateMicros: rate, EffectiveFrom: hr(-1)}},
			store.MeteringFleet{Nodes: []models.Node{node}, Devices: devices})
		var entries []models.LedgerEntry
		ideal := map[int64]*big.Rat{}
		free := []int64{1000, 1000}
		for id := int64(1); id <= 6; id++ {
			dev := rng.IntN(2)
			milli := rng.Int64N(free[dev]/2+1) + 1
			free[dev] -= milli
			start := hr(rng.Float64() * 2).Truncate(time.Second)
			end := start.Add(time.Duration(rng.Int64N(7200)+1) * time.Second)
			al := store.MeteredAllocation{Allocation: models.Allocation{ID: id, JobID: id, NodeID: 1,
				Devices: fmt.Sprintf(`[{"uuid":"g%d","milli":%d}]`, dev, milli), StartedAt: &start, EndedAt: &end}}
			entries = append(entries, run.chargeAllocation(al, time.Time{}, hr(5), hr(0))...)
			secs := int64(end.Sub(start) / time.Second)
			ideal[id] = big.NewRat(rate*milli*secs, 1000*3600)
		}
		paid := map[int64]int64{}
		for _, e := range entries {
			paid[*e.JobID] += e.AmountMicros
		}
		for id, want := range ideal {
			diff := new(big.Rat).Sub(big.NewRat(paid[id], 1), want)
			// One rounding per 15-minute piece: at most half a micro-unit each.
			if diff.Abs(diff).Cmp(big.NewRat(5, 1)) > 0 {
				t.Errorf("trial %d: job %d paid %d, exact share %s", trial, id, paid[id], want.FloatString(3))
			}
		}
		unalloc := run.unallocated(hr(0), hr(5), entries)
		var total, fleet int64
		for _, e := range append(entries, unalloc...) {
			total += e.AmountMicros
		}
		for _, c := range run.chunks(hr(0), hr(5)) {
			run.eachCapacity(c, func(_ meterNode, _ string, _ ratePiece, amount, _ int64) { fleet += amount })
		}
		if total != fleet {
			t.Fatalf("trial %d: jobs + unallocated = %d, fleet = %d", trial, total, fleet)
		}
	}
}

func TestNewRefusesIntervalsThatDoNotDivideADay(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{7 * time.Minute, 30 * time.Second, 25 * time.Hour, 90*time.Second + 500*time.Millisecond} {
		if _, err := New(&store.Store{}, &audit.Log{}, Config{Interval: d}); err == nil {
			t.Errorf("interval %s accepted", d)
		}
	}
	if _, err := New(&store.Store{}, &audit.Log{}, Config{Interval: 15 * time.Minute}); err != nil {
		t.Errorf("15m refused: %v", err)
	}
}
