package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// QueuedJobs returns up to limit queued jobs, oldest first: the scheduler's input.
func (s *Store) QueuedJobs(ctx context.Context, limit int) ([]models.Job, error) {
	var out []models.Job
	err := s.with(ctx).Where("state = ?", models.JobQueued).Order("id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("queued jobs: %w", err)
	}
	return out, nil
}

// JobsByIDs returns the jobs with the given ids, by id.
func (s *Store) JobsByIDs(ctx context.Context, ids []int64) ([]models.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []models.Job
	err := inBatches(ids, func(batch []int64) error {
		var jobs []models.Job
		err := s.read(ctx).Where("id IN ?", batch).Order("id").Find(&jobs).Error
		out = append(out, jobs...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jobs by id: %w", err)
	}
	return out, nil
}

// SetPendingReason records why a queued job waits; a job no longer queued is left alone.
func (s *Store) SetPendingReason(ctx context.Context, id int64, reason string) error {
	err := s.with(ctx).Model(&models.Job{}).Where("id = ? AND state = ?", id, models.JobQueued).
		Update("pending_reason", reason).Error
	if err != nil {
		return fmt.Errorf("set pending reason of job %d: %w", id, err)
	}
	return nil
}

// JobsRunningSince returns the ids of running jobs of a priority class whose current
// attempt started before before, for the class's maximum run time.
func (s *Store) JobsRunningSince(ctx context.Context, class string, before time.Time) ([]int64, error) {
	var ids []int64
	err := s.with(ctx).Raw(`SELECT DISTINCT j.id FROM jobs j JOIN allocations a ON a.job_id = j.id AND a.attempt = j.attempt
		WHERE j.state = ? AND j.priority_class = ? AND a.state <> ? AND a.started_at < ? ORDER BY j.id`,
		models.JobRunning, class, models.AllocEnded, before.UTC()).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("jobs of class %s running since before %s: %w", class, before.Format(time.RFC3339), err)
	}
	return ids, nil
}
