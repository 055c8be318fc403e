package accounting

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// MeterReport says what one Meter call did.
type MeterReport struct {
	// ClosedFrom and ClosedTo bound the fleet intervals this call closed (equal: none).
	ClosedFrom, ClosedTo time.Time
	Entries              int
	ChargedMicros        int64 // to jobs
	UnallocatedMicros    int64 // idle GPU capacity, corrections included
	// Problems are usage that could not be priced: no rate in effect, unknown devices.
	Problems []string
}

// Meter charges allocations and idle capacity up to until (see the package comment).
// It is idempotent: a second call with the same until adds nothing. Replicas that call
// it at once queue on a lock and never charge anything twice.
func (a *Accounting) Meter(ctx context.Context, until time.Time) (MeterReport, error) {
	until = until.UTC().Truncate(time.Second)
	var rep MeterReport
	err := a.store.InTx(ctx, func(tx *store.Store) error {
		watermark, metered, err := tx.LockMetering(ctx)
		if err != nil {
			return err
		}
		fleet, err := tx.MeteringFleet(ctx)
		if err != nil {
			return err
		}
		rates, err := tx.CostRates(ctx)
		if err != nil {
			return err
		}
		var horizon time.Time
		if metered {
			horizon = watermark.Add(-a.cfg.LateGrace)
		}
		allocs, err := tx.AllocationsToMeter(ctx, horizon)
		if err != nil {
			return err
		}
		ids := make([]int64, len(allocs))
		for i, al := range allocs {
			ids[i] = al.ID
		}
		chargedTo, err := tx.AllocationsMeteredUntil(ctx, ids)
		if err != nil {
			return err
		}
		run := newMeterRun(a.cfg.Interval, rates, fleet)
		closeTo := until.Truncate(a.cfg.Interval)
		if !metered {
			watermark = run.firstInterval(allocs, closeTo)
		}
		closeTo = maxTime(closeTo, watermark)

		var entries []models.LedgerEntry
		for _, al := range allocs {
			entries = append(entries, run.chargeAllocation(al, chargedTo[al.ID], until, watermark)...)
		}
		if closeTo.After(watermark) {
			earlier, err := tx.LedgerEntriesBetween(ctx, models.ResourceGPU, true, watermark, closeTo)
			if err != nil {
				return err
			}
			entries = append(entries, run.unallocated(watermark, closeTo, append(earlier, entries...))...)
		}
		if err := tx.AppendLedgerEntries(ctx, entries); err != nil {
			return err
		}
		if err := tx.SetMeteredUntil(ctx, closeTo); err != nil {
			return err
		}
		rep = MeterReport{ClosedFrom: watermark, ClosedTo: closeTo, Entries: len(entries), Problems: run.problemList()}
		for _, e := range entries {
			if e.JobID != nil {
				rep.ChargedMicros += e.AmountMicros
			} else {
				rep.UnallocatedMicros += e.AmountMicros
			}
		}
		return nil
	})
	if err != nil {
		return MeterReport{}, fmt.Errorf("meter up to %s: %w", until.Format(time.RFC3339), err)
	}
	return rep, nil
}

// meterNode is a node as metering sees it: where it is priced and which GPUs it has.
type meterNode struct {
	id       int64
	poolID   *int64
	capacity string
	since    time.Time          // when it registered: its GPUs cost from then on
	gpus     []models.GPUDevice // the capacity it pays for; none for a node that is down
}

// meterRun is the pure part of one Meter call: fleet and rates in, entries out.
type meterRun struct {
	interval time.Duration
	book     rateBook
	gpus     gpuIndex
	nodes    map[int64]meterNode
	nodeIDs  []int64
	problems map[string]bool
}

func newMeterRun(interval time.Duration, rates []models.CostRate, f store.MeteringFleet) *meterRun {
	capacity := map[int64]string{}
	for _, p := range f.Pools {
		capacity[p.ID] = p.CapacityType
	}
	r := &meterRun{interval: interval, book: newRateBook(rates), gpus: newGPUIndex(f.Devices, f.Slices),
		nodes: map[int64]meterNode{}, problems: map[string]bool{}}
	for _, n := range f.Nodes {
		mn := meterNode{id: n.ID, poolID: n.PoolID, since: n.CreatedAt.UTC().Truncate(time.Second)}
		if n.PoolID != nil {
			mn.capacity = capacity[*n.PoolID]
		}
		r.nodes[n.ID] = mn
		r.nodeIDs = append(r.nodeIDs, n.ID)
	}
	for _, d := range f.Devices {
		mn, ok := r.nodes[d.NodeID]
		if !ok {
			continue
		}
		mn.gpus = append(mn.gpus, d)
		r.nodes[d.NodeID] = mn
	}
	for _, n := range f.Nodes {
		if n.State == models.NodeDown {
			mn := r.nodes[n.ID]
			mn.gpus = nil
			r.nodes[n.ID] = mn
		}
	}
	sort.Slice(r.nodeIDs, func(i, j int) bool { return r.nodeIDs[i] < r.nodeIDs[j] })
	return r
}

// firstInterval is where the first Meter call starts: the interval of the earliest GPU
// or allocation, or closeTo on an empty installation.
func (r *meterRun) firstInterval(allocs []store.MeteredAllocation, closeTo time.Time) time.Time {
	first := closeTo
	for _, n := range r.nodes {
		if len(n.gpus) > 0 {
			first = minTime(first, n.since)
		}
	}
	for _, al := range allocs {
		first = minTime(first, al.StartedAt.UTC())
	}
	return first.Truncate(r.interval)
}

// chargeAllocation prices al from where its charges end (or its start) to its end, or to
// the last whole interval before until while it runs. Charges before closedTo land in
// intervals already closed, whose idle capacity was charged as unallocated: each gets a
// negative unallocated entry beside it so that the fleet total stays right.
func (r *meterRun) chargeAllocation(al store.MeteredAllocation, chargedTo, until, closedTo time.Time) []models.LedgerEntry {
	from := al.StartedAt.UTC().Truncate(time.Second)
	if chargedTo.After(from) {
		from = chargedTo
	}
	to := until.Truncate(r.interval)
	if al.EndedAt != nil && !al.EndedAt.After(until) {
		to = al.EndedAt.UTC().Truncate(time.Second)
	}
	if !from.Before(to) {
		return nil
	}
	node, known := r.nodes[al.NodeID]
	if !known {
		r.problem(fmt.Sprintf("allocation %d: node %d is not registered; its GPUs are not charged", al.ID, al.NodeID))
	}
	shares, problems := r.gpus.shares(al.Allocation)
	for _, p := range problems {
		r.problem(p)
	}
	var total int64
	for _, s := range shares {
		total += s.units
	}
	owner := models.LedgerEntry{
		JobID: &al.JobID, Attempt: al.Attempt, AllocationID: ptr(al.ID), UserID: ptr(al.UserID),
		ProjectID: ptr(al.ProjectID), TeamID: ptr(al.TeamID), PoolID: node.poolID, NodeID: ptr(al.NodeID), ImageID: al.ImageID,
	}
	base := rateKey{poolID: deref(node.poolID), capacity: node.capacity}
	var out []models.LedgerEntry
	for _, chunk := range r.chunks(from, to) {
		for _, s := range shares {
			k := base
			k.resource, k.gpuModel = models.ResourceGPU, s.model
			out = append(out, r.price(owner, k, chunk, func(string) (int64, int64) { return s.units, unitsPerGPU * 3600 })...)
		}
		usage := []struct {
			resource string
			num, den int64
		}{
			{models.ResourceCPU, al.CPUMilli, 1000 * 3600},
			{models.ResourceRAM, al.MemoryMiB, 1024 * 3600},
			{models.ResourceScratch, al.ScratchMiB, 1024 * 3600 * 730},
		}
		for _, u := range usage {
			if u.num <= 0 {
				continue
			}
			k := base
			k.resource = u.resource
			out = append(out, r.price(owner, k, chunk, func(string) (int64, int64) { return u.num, u.den })...)
		}
		if al.ImageID != nil {
			k := base
			k.resource, k.imageID = models.ResourceLicense, *al.ImageID
			out = append(out, r.price(owner, k, chunk, func(unit string) (int64, int64) {
				if unit == UnitGPUHour {
					return total, unitsPerGPU * 3600
				}
				return 1, 3600
			})...)
		}
	}
	for _, e := range out {
		if e.Resource == models.ResourceGPU && !e.PeriodEnd.After(closedTo) {
			out = append(out, correction(e))
		}
	}
	return out
}

// price writes owner's entries for usage keyed k over chunk, one per price in effect.
// measure gives, for the rate's unit, the usage per second as num/den units.
func (r *meterRun) price(owner models.LedgerEntry, k rateKey, chunk [2]time.Time, measure func(unit string) (num, den int64)) []models.LedgerEntry {
	var out []models.LedgerEntry
	for _, p := range r.book.pieces(k, chunk[0], chunk[1]) {
		if p.rate == nil {
			r.problem("no rate in effect for " + k.String())
			continue
		}
		num, den := measure(p.rate.Unit)
		if num <= 0 {
			continue
		}
		secs := int64(p.to.Sub(p.from) / time.Second)
		e := owner
		e.Resource = k.resource
		e.GPUModel = k.gpuModel
		e.QuantityMilli = mulDiv(1000, num, secs, den)
		e.RateMicros = p.rate.RateMicros
		e.AmountMicros = mulDiv(p.rate.RateMicros, num, secs, den)
		e.PeriodStart, e.PeriodEnd = p.from, p.to
		out = append(out, e)
	}
	return out
}

// correction cancels, in the unallocated column, a GPU charge made after its interval closed.
func correction(e models.LedgerEntry) models.LedgerEntry {
	return models.LedgerEntry{
		PoolID: e.PoolID, NodeID: e.NodeID, GPUModel: e.GPUModel, Resource: models.ResourceGPU,
		QuantityMilli: -e.QuantityMilli, RateMicros: e.RateMicros, AmountMicros: -e.AmountMicros,
		PeriodStart: e.PeriodStart, PeriodEnd: e.PeriodEnd,
	}
}

// chunks splits [from, to) at interval boundaries.
func (r *meterRun) chunks(from, to time.Time) [][2]time.Time { return splitEvery(from, to, r.interval) }

// splitEvery splits [from, to) at the multiples of step (UTC-aligned when step divides a day).
func splitEvery(from, to time.Time, step time.Duration) [][2]time.Time {
	var out [][2]time.Time
	for t := from; t.Before(to); {
		next := minTime(t.Truncate(step).Add(step), to)
		out = append(out, [2]time.Time{t, next})
		t = next
	}
	return out
}

// slot identifies the GPUs of one model on one node in one interval.
type slot struct {
	node  int64
	model string
	start time.Time
}

// unallocated closes the intervals of [from, to): for each node, GPU model and price,
// the cost of the GPUs minus what jobs were charged for them. jobCharges are all job GPU
// charges inside [from, to), earlier ones and this call's.
func (r *meterRun) unallocated(from, to time.Time, jobCharges []models.LedgerEntry) []models.LedgerEntry {
	charged := map[slot][]models.LedgerEntry{}
	for _, e := range jobCharges {
		if e.JobID == nil || e.Resource != models.ResourceGPU || e.NodeID == nil || e.PeriodStart.Before(from) || e.PeriodEnd.After(to) {
			continue
		}
		s := slot{node: *e.NodeID, model: e.GPUModel, start: e.PeriodStart.UTC().Truncate(r.interval)}
		charged[s] = append(charged[s], e)
	}
	var out []models.LedgerEntry
	for _, chunk := range r.chunks(from, to) {
		r.eachCapacity(chunk, func(n meterNode, model string, p ratePiece, capAmount, capQty int64) {
			amount, qty := capAmount, capQty
			for _, e := range charged[slot{node: n.id, model: model, start: chunk[0]}] {
				if !e.PeriodStart.Before(p.from) && !e.PeriodEnd.After(p.to) {
					amount -= e.AmountMicros
					qty -= e.QuantityMilli
				}
			}
			if amount == 0 && qty == 0 {
				return
			}
			out = append(out, models.LedgerEntry{
				PoolID: n.poolID, NodeID: ptr(n.id), GPUModel: model, Resource: models.ResourceGPU,
				QuantityMilli: qty, RateMicros: p.rate.RateMicros, AmountMicros: amount, PeriodStart: p.from, PeriodEnd: p.to,
			})
		})
	}
	return out
}

// eachCapacity calls fn with the cost of each node's GPUs of each model, per price in
// effect within chunk, counting each GPU from the second its node registered (an agent
// that re-registers replaces its device rows, so their own creation time says less).
func (r *meterRun) eachCapacity(chunk [2]time.Time, fn func(n meterNode, model string, p ratePiece, amount, qty int64)) {
	for _, id := range r.nodeIDs {
		n := r.nodes[id]
		byModel := map[string][]models.GPUDevice{}
		var names []string
		for _, d := range n.gpus {
			if _, seen := byModel[d.Model]; !seen {
				names = append(names, d.Model)
			}
			byModel[d.Model] = append(byModel[d.Model], d)
		}
		sort.Strings(names)
		for _, model := range names {
			k := rateKey{resource: models.ResourceGPU, gpuModel: model, poolID: deref(n.poolID), capacity: n.capacity}
			for _, p := range r.book.pieces(k, chunk[0], chunk[1]) {
				start := maxTime(p.from, n.since)
				if !start.Before(p.to) {
					continue
				}
				gpuSecs := int64(len(byModel[model])) * int64(p.to.Sub(start)/time.Second)
				if gpuSecs == 0 {
					continue
				}
				if p.rate == nil {
					r.problem("no rate in effect for " + k.String())
					continue
				}
				fn(n, model, p, mulDiv(p.rate.RateMicros, gpuSecs, 1, 3600), mulDiv(1000, gpuSecs, 1, 3600))
			}
		}
	}
}

func (r *meterRun) problem(p string) { r.problems[p] = true }

func (r *meterRun) problemList() []string {
	out := make([]string, 0, len(r.problems))
	for p := range r.problems {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func ptr[T any](v T) *T { return &v }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
