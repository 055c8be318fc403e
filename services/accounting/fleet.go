package accounting

import (
	"context"
	"time"
)

// FleetCost returns what the GPUs of the fleet as registered now cost over the whole
// intervals of [from, to), priced as Meter prices them (a GPU with no rate costs nothing): once those intervals are metered,
// job GPU charges plus unallocated entries add up to exactly this.
func (a *Accounting) FleetCost(ctx context.Context, from, to time.Time) (int64, error) {
	fleet, err := a.store.MeteringFleet(ctx)
	if err != nil {
		return 0, err
	}
	rates, err := a.store.CostRates(ctx)
	if err != nil {
		return 0, err
	}
	run := newMeterRun(a.cfg.Interval, rates, fleet)
	var total int64
	for _, chunk := range run.chunks(from.UTC().Truncate(a.cfg.Interval), to.UTC().Truncate(a.cfg.Interval)) {
		run.eachCapacity(chunk, func(_ meterNode, _ string, _ ratePiece, amount, _ int64) { total += amount })
	}
	return total, nil
}
