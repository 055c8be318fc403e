package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// stopOverrunning fails the running jobs whose attempt ran longer than their priority
// class allows; they are asked to stop like a cancelled job.
func (s *Service) stopOverrunning(ctx context.Context) error {
	classes, err := s.store.PriorityClasses(ctx)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	for _, c := range classes {
		if c.MaxRunTimeSec <= 0 {
			continue
		}
		limit := time.Duration(c.MaxRunTimeSec) * time.Second
		ids, err := s.store.JobsRunningSince(ctx, c.Name, now.Add(-limit))
		if err != nil {
			return err
		}
		for _, id := range ids {
			msg := fmt.Sprintf("stopped: it ran longer than the %s that class %s allows", limit, c.Name)
			if _, err := s.endJob(ctx, id, models.JobFailed, "max-run-time", "job.timed_out", "system", msg); err != nil && !errors.Is(err, ErrFinished) {
				return err
			}
		}
	}
	return nil
}
