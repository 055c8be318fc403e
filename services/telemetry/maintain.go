package telemetry

import (
	"context"
	"log/slog"
	"time"
)

// RunMaintenance calls Maintain every interval until ctx ends, with the time from
// clock. Errors are logged and retried on the next pass. Run it on one replica only:
// the leader, or the single server on SQLite.
func (s *Service) RunMaintenance(ctx context.Context, clock func() time.Time, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r, p, err := s.Maintain(ctx, clock())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("telemetry maintenance failed", "err", err)
		case err == nil && (r.MinuteRows+r.HourRows > 0 || p.Raw+p.Minute+p.Hour > 0):
			log.Debug("telemetry maintained", "minute_rows", r.MinuteRows, "hour_rows", r.HourRows,
				"pruned_raw", p.Raw, "pruned_minute", p.Minute, "pruned_hour", p.Hour)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
