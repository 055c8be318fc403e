// Package accounting prices GPU time: rate cards with effective dates, the metering of
// allocations into an append-only ledger of integer micro-units, fair shares of
// fractional and MIG GPUs, unallocated fleet capacity, roll-ups, budgets and CSV export.
//
// Metering works in fixed intervals aligned to UTC (Config.Interval). Meter(ctx, until)
// charges every allocation for the time since its last charge, in whole intervals while
// it runs and up to its end once it has ended, and closes every whole interval of the fleet
// before until by charging each node's idle GPU capacity as "unallocated" (no job). For
// each closed interval the charges of a node's GPUs plus its unallocated entries equal the
// cost of those GPUs for the interval, to the micro-unit. Nothing in the ledger is ever
// updated: an allocation reported after its interval was closed is charged with a
// correcting (negative) unallocated entry beside it.
//
// Shares of one GPU are kept in 1/7000ths, the least common multiple of milli-GPUs and of
// the seven compute slices of a MIG-capable card, so that 0.25 GPU and 3g.40gb (3/7) are
// both exact.
package accounting
