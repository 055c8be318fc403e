package accounting

import (
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Prices answers what an hour of a machine costs, from the rate card with the meter's
// precedence (a pool's own rate, then the GPU model's, then the capacity type's), so
// that what the autoscaler and the scheduler call cheapest is what the ledger charges.
type Prices struct {
	book rateBook
}

// NewPrices reads the rate card.
func NewPrices(rates []models.CostRate) Prices { return Prices{book: newRateBook(rates)} }

// Machine is what a price is asked for: a node of a pool (poolID 0: none) with its
// capacity type, GPUs of one model, CPU and memory.
type Machine struct {
	PoolID    int64
	Capacity  string
	GPUModel  string
	GPUs      int
	CPUMilli  int64
	MemoryMiB int64
}

// NodeHour is what an hour of the machine costs at t in micro-units: its GPUs at the
// GPU rate, its cores at the CPU rate and its memory at the RAM rate; resources without
// a rate in effect cost nothing.
func (p Prices) NodeHour(t time.Time, m Machine) int64 {
	var total int64
	if m.GPUs > 0 {
		total += p.hourly(t, models.ResourceGPU, m) * int64(m.GPUs)
	}
	total += mulDiv(p.hourly(t, models.ResourceCPU, m), m.CPUMilli, 1, 1000)
	total += mulDiv(p.hourly(t, models.ResourceRAM, m), m.MemoryMiB, 1, 1024)
	return total
}

func (p Prices) hourly(t time.Time, resource string, m Machine) int64 {
	k := rateKey{resource: resource, poolID: m.PoolID, capacity: m.Capacity}
	if resource == models.ResourceGPU {
		k.gpuModel = m.GPUModel
	}
	if r := p.book.at(candidates(k), t.UTC()); r != nil {
		return r.RateMicros
	}
	return 0
}
