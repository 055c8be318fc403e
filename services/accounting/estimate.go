package accounting

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Running is what a job holds while it runs, over all its replicas: what an estimate
// prices.
type Running struct {
	GPUModel   string
	GPUMilli   int64 // whole GPUs and shares of one, in milli-GPU
	MIGSlices  int64 // compute slices of the MIG instances it holds
	CPUMilli   int64
	MemoryMiB  int64
	ScratchMiB int64
	Replicas   int64  // licences per job-hour are charged per replica
	ImageID    *int64 // the catalog image, whose licence is charged
}

// Estimate is the price of an hour of running.
type Estimate struct {
	PerHourMicros int64
	// Unpriced names each resource used without a rate in effect, which the
	// estimate leaves out (metering would too).
	Unpriced []string
}

// PriceList prices usage at the rates in effect at one instant, as metering would:
// the most specific rate first (see candidates), any pool and capacity type.
type PriceList struct {
	book rateBook
	at   time.Time
}

// PriceList reads the rate cards once, for prices at at.
func (a *Accounting) PriceList(ctx context.Context, at time.Time) (*PriceList, error) {
	rates, err := a.store.CostRates(ctx)
	if err != nil {
		return nil, fmt.Errorf("price list: %w", err)
	}
	return &PriceList{book: newRateBook(rates), at: at.UTC()}, nil
}

// GPUHour is the price of one whole GPU of model for an hour, and whether one is set.
func (p *PriceList) GPUHour(model string) (int64, bool) {
	r := p.book.at(candidates(rateKey{resource: models.ResourceGPU, gpuModel: model}), p.at)
	if r == nil {
		return 0, false
	}
	return r.RateMicros, true
}

// Hourly is what an hour of u costs.
func (p *PriceList) Hourly(u Running) Estimate {
	var e Estimate
	units := u.GPUMilli*unitsPerMilli + u.MIGSlices*unitsPerSlice
	charge := func(k rateKey, num, den int64) {
		if num <= 0 {
			return
		}
		r := p.book.at(candidates(k), p.at)
		if r == nil {
			e.Unpriced = append(e.Unpriced, k.String())
			return
		}
		e.PerHourMicros += mulDiv(r.RateMicros, num, 1, den)
	}
	charge(rateKey{resource: models.ResourceGPU, gpuModel: u.GPUModel}, units, unitsPerGPU)
	charge(rateKey{resource: models.ResourceCPU}, u.CPUMilli, 1000)
	charge(rateKey{resource: models.ResourceRAM}, u.MemoryMiB, 1024)
	charge(rateKey{resource: models.ResourceScratch}, u.ScratchMiB, 1024*730)
	if u.ImageID != nil {
		// A licence is priced per job-hour or per GPU-hour; an image without one costs nothing more.
		k := rateKey{resource: models.ResourceLicense, imageID: *u.ImageID}
		if r := p.book.at(candidates(k), p.at); r != nil {
			if r.Unit == UnitGPUHour {
				e.PerHourMicros += mulDiv(r.RateMicros, units, 1, unitsPerGPU)
			} else {
				e.PerHourMicros += r.RateMicros * max(u.Replicas, 1)
			}
		}
	}
	return e
}
