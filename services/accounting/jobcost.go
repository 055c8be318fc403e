package accounting

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// JobCost is what job j was charged up to now, by resource, most expensive first, and
// the instant up to which the ledger is metered (zero when it never was): a running
// job's last partial interval is charged at the next metering.
func (a *Accounting) JobCost(ctx context.Context, j *models.Job, now time.Time) ([]Row, time.Time, error) {
	day := 24 * time.Hour
	rows, err := a.store.CostRollup(ctx, store.RollupQuery{By: store.ByResource, JobIDs: []int64{j.ID},
		From: j.SubmittedAt.UTC().Truncate(day), To: now.UTC().Truncate(day).Add(day)})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("cost of job %d: %w", j.ID, err)
	}
	until, ok, err := a.store.MeteredUntil(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("cost of job %d: %w", j.ID, err)
	}
	if !ok {
		until = time.Time{}
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Label: r.Name, QuantityMilli: r.QuantityMilli, AmountMicros: r.AmountMicros}
	}
	return out, until, nil
}
