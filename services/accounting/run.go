package accounting

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// RunMetering meters up to clock() every `every` and as soon as ended receives (an
// allocation ended: it is charged to its end without waiting for the next round),
// until ctx ends. Failures are logged and retried at the next round; problems (usage
// without a rate) are logged when they change, not at every round.
func (a *Accounting) RunMetering(ctx context.Context, clock func() time.Time, every time.Duration, ended <-chan struct{}, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	var problems []string
	for {
		rep, err := a.Meter(ctx, clock())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("metering failed; retrying at the next round", "err", err)
		case err == nil:
			if !slices.Equal(rep.Problems, problems) && len(rep.Problems) > 0 {
				log.Warn("usage metered without a price: add the rates it needs on the admin rates page", "problems", rep.Problems)
			}
			problems = rep.Problems
			if rep.Entries > 0 {
				log.Debug("metered", "entries", rep.Entries, "charged_micros", rep.ChargedMicros, "unallocated_micros", rep.UnallocatedMicros,
					"closed_to", rep.ClosedTo)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ended:
		case <-t.C:
		}
	}
}
