package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// PruneResult says how many rows of each resolution Prune deleted.
type PruneResult struct {
	Raw, Minute, Hour int64
}

// Prune deletes what is older than its retention. It never deletes raw or 1-minute
// rows that are not rolled up yet, so a stopped roll-up loses no history.
func (s *Service) Prune(ctx context.Context, now time.Time) (PruneResult, error) {
	var res PruneResult
	now = now.UTC()
	for _, p := range []struct {
		resolution string
		retention  time.Duration
		rolledInto *level
		deleted    *int64
	}{
		{models.ResolutionRaw, s.cfg.RawRetention, &minuteLevel, &res.Raw},
		{models.ResolutionMinute, s.cfg.MinuteRetention, &hourLevel, &res.Minute},
		{models.ResolutionHour, s.cfg.HourRetention, nil, &res.Hour},
	} {
		cutoff := now.Add(-p.retention)
		if p.rolledInto != nil {
			rolled, _, err := s.rolled(ctx, *p.rolledInto)
			if err != nil {
				return res, fmt.Errorf("prune %s telemetry: %w", p.resolution, err)
			}
			if rolled.IsZero() {
				continue
			}
			if rolled.Before(cutoff) {
				cutoff = rolled
			}
		}
		n, err := s.store.DeleteTelemetryBefore(ctx, p.resolution, cutoff)
		if err != nil {
			return res, fmt.Errorf("prune %s telemetry: %w", p.resolution, err)
		}
		*p.deleted = n
	}
	return res, nil
}

// Maintain rolls up, then prunes: what the leader runs every minute or so.
func (s *Service) Maintain(ctx context.Context, now time.Time) (RollupResult, PruneResult, error) {
	r, err := s.Rollup(ctx, now)
	if err != nil {
		return r, PruneResult{}, err
	}
	p, err := s.Prune(ctx, now)
	return r, p, err
}
