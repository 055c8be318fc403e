package accounting_test

import (
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
)

// A node's hourly price takes the most specific rate in effect, as metering does.
func TestNodeHourPrice(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	pool := int64(7)
	rates := []models.CostRate{
		{ID: 1, Resource: models.ResourceGPU, GPUModel: "A100-80GB", Unit: accounting.UnitGPUHour, RateMicros: 4_000_000, EffectiveFrom: t0},
		{ID: 2, Resource: models.ResourceGPU, GPUModel: "A100-80GB", CapacityType: models.CapacitySpot, Unit: accounting.UnitGPUHour, RateMicros: 1_200_000, EffectiveFrom: t0},
		{ID: 3, Resource: models.ResourceGPU, GPUModel: "A100-80GB", PoolID: &pool, Unit: accounting.UnitGPUHour, RateMicros: 1_000_000, EffectiveFrom: t0.Add(48 * time.Hour)},
		{ID: 4, Resource: models.ResourceCPU, Unit: accounting.UnitCoreHour, RateMicros: 40_000, EffectiveFrom: t0},
		{ID: 5, Resource: models.ResourceRAM, Unit: accounting.UnitGiBHour, RateMicros: 5_000, EffectiveFrom: t0},
	}
	p := accounting.NewPrices(rates)
	m := accounting.Machine{GPUModel: "A100-80GB", GPUs: 8, CPUMilli: 96_000, MemoryMiB: 512 << 10, Capacity: models.CapacityOnDemand}
	day := t0.Add(24 * time.Hour)
	cases := []struct {
		name string
		at   time.Time
		m    func(accounting.Machine) accounting.Machine
		want int64
	}{
		{"on-demand: the model's rate", day, func(m accounting.Machine) accounting.Machine { return m }, 8*4_000_000 + 96*40_000 + 512*5_000},
		{"spot: the capacity type's rate", day, func(m accounting.Machine) accounting.Machine { m.Capacity = models.CapacitySpot; return m },
			8*1_200_000 + 96*40_000 + 512*5_000},
		{"the pool's own rate once in effect", t0.Add(72 * time.Hour), func(m accounting.Machine) accounting.Machine {
			m.PoolID, m.Capacity = pool, models.CapacitySpot
			return m
		}, 8*1_000_000 + 96*40_000 + 512*5_000},
		{"before any rate", t0.Add(-time.Hour), func(m accounting.Machine) accounting.Machine { return m }, 0},
		{"CPU node", day, func(accounting.Machine) accounting.Machine {
			return accounting.Machine{CPUMilli: 1500, MemoryMiB: 1536}
		}, 60_000 + 7_500},
	}
	for _, c := range cases {
		if got := p.NodeHour(c.at, c.m(m)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
