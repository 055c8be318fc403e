package dispatch

import (
	"context"
	"time"
)

// Run loops until ctx ends: mark silent nodes lost, stop what runs on drained
// nodes past their deadline, fail jobs past their class's maximum run time, then
// schedule. It runs every
// TickInterval and as soon as Kick is called.
func (s *Service) Run(ctx context.Context) {
	// A replica that just took over judges nodes only a timeout after it started
	// watching them: they may have been talking to the old leader's database only.
	s.started = s.now().UTC()
	t := time.NewTicker(s.cfg.TickInterval)
	defer t.Stop()
	for {
		s.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
	}
}

// Tick runs one pass of the loop; errors are logged and retried on the next pass.
func (s *Service) Tick(ctx context.Context) {
	if _, err := s.markLostNodes(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("liveness check failed", "err", err)
	}
	if err := s.stopDrainedNodes(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("drain check failed", "err", err)
	}
	if err := s.stopOverrunning(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("run time check failed", "err", err)
	}
	if _, err := s.schedule(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("scheduling pass failed", "err", err)
	}
}
