package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/services/store"
)

// usageWindow is how far back fair share looks: four half-lives of the scheduler's
// default week, after which history weighs a sixteenth of what it did.
const usageWindow = 28 * 24 * time.Hour

// usageRefresh is how often the history is read again; between reads each pass reuses it.
const usageRefresh = time.Minute

// usageBucket is the grain of the history: fair share decays over days, so an hour's
// rounding changes nothing that matters.
const usageBucket = time.Hour

// usageCache keeps the teams' recent usage history between scheduling passes.
type usageCache struct {
	mu      sync.Mutex
	readAt  time.Time
	records []Usage
}

// history returns the teams' use from allocations that ended in the last usageWindow,
// summed per team and hour. What still runs is not in it: the snapshot's running
// allocations count for that.
func (c *usageCache) history(ctx context.Context, st *store.Store, now time.Time, teams map[int64]string) ([]Usage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < usageRefresh && !now.Before(c.readAt) {
		return c.records, nil
	}
	rows, err := st.UsageEndedSince(ctx, now.Add(-usageWindow))
	if err != nil {
		return nil, err
	}
	type key struct {
		team  int64
		start time.Time
	}
	// Per team and hour: milli-GPU (and CPU, MiB) seconds.
	sums := map[key]*[3]int64{}
	var order []key
	for _, r := range rows {
		for from := r.StartedAt.UTC(); from.Before(r.EndedAt); {
			start := from.Truncate(usageBucket)
			to := start.Add(usageBucket)
			if r.EndedAt.Before(to) {
				to = r.EndedAt.UTC()
			}
			secs := int64(to.Sub(from).Seconds())
			k := key{r.TeamID, start}
			s := sums[k]
			if s == nil {
				s = &[3]int64{}
				sums[k] = s
				order = append(order, k)
			}
			s[0] += r.GPUMilli * secs
			s[1] += r.CPUMilli * secs
			s[2] += r.MemoryMiB * secs
			from = to
		}
	}
	bucket := int64(usageBucket.Seconds())
	records := make([]Usage, 0, len(order))
	for _, k := range order {
		s := sums[k]
		records = append(records, Usage{Team: teams[k.team], Start: k.start, End: k.start.Add(usageBucket),
			GPUMilli: s[0] / bucket, CPUMilli: s[1] / bucket, MemoryMiB: s[2] / bucket})
	}
	c.readAt, c.records = now, records
	return records, nil
}
