package governance

import (
	"context"
	"time"

	"github.com/gantry-gpu/gantry/services/audit"
)

// Run evaluates the rules and then sends what is due every `every`, until ctx ends.
// Delivery comes after evaluation in each round so that a new alert goes out at once;
// a channel that is down only delays its own notifications (see Deliver). Failures are
// logged and tried again at the next round.
func (s *Service) Run(ctx context.Context, clock func() time.Time, every time.Duration) {
	ctx = audit.WithActor(ctx, audit.System())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := s.Evaluate(ctx, clock())
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("rule evaluation failed; retrying at the next round", "err", err)
		case len(rep.Raised) > 0:
			s.log.Info("alerts raised", "count", len(rep.Raised))
		}
		if _, err := s.Deliver(ctx, clock()); err != nil && ctx.Err() == nil {
			s.log.Error("notification delivery failed; retrying at the next round", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
