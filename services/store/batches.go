package store

import (
	"cmp"
	"slices"
)

// idBatch is how many ids one IN list holds. A statement takes at most 32,766
// parameters on SQLite and 65,535 on PostgreSQL, and what some reads ask for by id
// (every GPU of the fleet for a scheduling pass, the jobs of every active allocation,
// a month's jobs of a cost report, the GPUs that every running job holds) is more on a
// big installation.
const idBatch = 1000

// inBatches calls fn with ids sorted and without repeats, idBatch at a time, so that
// reads ordered by id come out in order across the batches.
func inBatches[T cmp.Ordered](ids []T, fn func(batch []T) error) error {
	sorted := slices.Compact(slices.Sorted(slices.Values(ids)))
	for start := 0; start < len(sorted); start += idBatch {
		if err := fn(sorted[start:min(start+idBatch, len(sorted))]); err != nil {
			return err
		}
	}
	return nil
}
