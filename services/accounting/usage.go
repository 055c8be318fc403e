package accounting

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Usage is consumption that no allocation carries: bytes sent out of the fleet (egress)
// or held on persistent storage for a period.
type Usage struct {
	Resource  string // models.ResourceEgress or models.ResourceStorage
	ProjectID int64
	JobID     *int64 // the job whose usage it was, if one
	UserID    *int64
	PoolID    *int64
	// Bytes is what was sent (egress) or what was held throughout From-To (storage).
	Bytes    int64
	From, To time.Time
}

const bytesPerGiB = 1 << 30

// MaxUsagePeriod is the longest period one usage report covers. A meter reports as it
// goes (a day, a month of a bill); the bound keeps a report's ledger entries, one per
// day, few, and its sums within int64.
const MaxUsagePeriod = 366 * 24 * time.Hour

// RecordUsage prices u and appends it to the ledger, audited with the actor of ctx.
// Egress is spread over its period by time, so a price change inside it is honoured;
// storage pays GiB-months.
func (a *Accounting) RecordUsage(ctx context.Context, u Usage) ([]models.LedgerEntry, error) {
	from, to := u.From.UTC().Truncate(time.Second), u.To.UTC().Truncate(time.Second)
	switch {
	case u.Resource != models.ResourceEgress && u.Resource != models.ResourceStorage:
		return nil, models.Invalid("resource", "%q is not recorded as usage; want egress or storage (allocations meter the rest)", u.Resource)
	case u.Bytes < 0:
		return nil, models.Invalid("bytes", "%d is negative", u.Bytes)
	case from.IsZero() || !from.Before(to):
		return nil, models.Invalid("to", "the period must end after it starts (from %s, to %s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.Sub(from) > MaxUsagePeriod:
		return nil, models.Invalid("to", "the period from %s to %s is longer than 366 days: report it in parts", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	project, err := a.store.ProjectByID(ctx, u.ProjectID)
	if err != nil {
		return nil, models.Invalid("project_id", "there is no project %d", u.ProjectID)
	}
	if u.JobID != nil {
		if j, err := a.store.JobByID(ctx, *u.JobID); err != nil || j.ProjectID != project.ID {
			return nil, models.Invalid("job_id", "project %s has no job %d", project.Name, *u.JobID)
		}
	}
	rates, err := a.store.CostRates(ctx)
	if err != nil {
		return nil, err
	}
	pools, err := a.store.NodePools(ctx)
	if err != nil {
		return nil, err
	}
	book := newRateBook(rates)
	k := rateKey{resource: u.Resource, poolID: deref(u.PoolID)}
	for _, p := range pools {
		if u.PoolID != nil && p.ID == *u.PoolID {
			k.capacity = p.CapacityType
		}
	}
	den := int64(bytesPerGiB) * 730 * 3600
	if u.Resource == models.ResourceEgress {
		den = int64(bytesPerGiB) * int64(to.Sub(from)/time.Second)
	}
	owner := models.LedgerEntry{JobID: u.JobID, UserID: u.UserID, ProjectID: &project.ID, TeamID: &project.TeamID, PoolID: u.PoolID}
	// One entry per day and price. Amounts round cumulatively, so that the entries of a
	// long period add up to the rounded total rather than to many roundings.
	var entries []models.LedgerEntry
	var priced, secs, paid, counted int64
	for _, day := range splitEvery(from, to, 24*time.Hour) {
		for _, p := range book.pieces(k, day[0], day[1]) {
			if p.rate == nil {
				return nil, models.Invalid("resource", "no %s rate is in effect at %s: an admin adds one under Cost → Rates first", u.Resource, p.from.Format(time.RFC3339))
			}
			n := int64(p.to.Sub(p.from) / time.Second)
			priced += p.rate.RateMicros * n
			secs += n
			e := owner
			e.Resource, e.RateMicros, e.PeriodStart, e.PeriodEnd = u.Resource, p.rate.RateMicros, p.from, p.to
			amount, ok := mulDivFits(u.Bytes, priced, 1, den)
			if !ok {
				return nil, models.Invalid("bytes", "%d bytes at the %s rates cost more than the ledger counts: check the figure, or report it in parts", u.Bytes, u.Resource)
			}
			e.AmountMicros = amount - paid
			e.QuantityMilli = mulDiv(u.Bytes, 1000*secs, 1, den) - counted
			paid, counted = paid+e.AmountMicros, counted+e.QuantityMilli
			entries = append(entries, e)
		}
	}
	err = a.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.AppendLedgerEntries(ctx, entries); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "usage.recorded", ObjectType: "project", ObjectID: fmt.Sprint(project.ID), ProjectID: &project.ID,
			Detail: map[string]any{"resource": u.Resource, "bytes": u.Bytes, "from": from, "to": to, "job_id": u.JobID, "amount_micros": paid}})
	})
	if err != nil {
		return nil, fmt.Errorf("record %s usage of project %d: %w", u.Resource, u.ProjectID, err)
	}
	return entries, nil
}
