package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// jobMetricsPerInsert keeps one INSERT of job metrics well under SQLite's bound-parameter limit.
const jobMetricsPerInsert = 1000

// InsertJobMetrics appends metric points; when checkpointAt is set it also moves the
// job's last checkpoint time forward to it (never back), in the same transaction.
func (s *Store) InsertJobMetrics(ctx context.Context, jobID int64, points []models.JobMetric, checkpointAt *time.Time) error {
	err := s.InTx(ctx, func(tx *Store) error {
		for start := 0; start < len(points); start += jobMetricsPerInsert {
			chunk := points[start:min(start+jobMetricsPerInsert, len(points))]
			for i := range chunk {
				chunk[i].JobID, chunk[i].At = jobID, chunk[i].At.UTC()
			}
			if err := translate(tx.with(ctx).Create(&chunk).Error); err != nil {
				return err
			}
		}
		if checkpointAt == nil {
			return nil
		}
		at := checkpointAt.UTC()
		return tx.with(ctx).Model(&models.Job{}).
			Where("id = ? AND (last_checkpoint_at IS NULL OR last_checkpoint_at < ?)", jobID, at).
			Update("last_checkpoint_at", at).Error
	})
	if err != nil {
		return fmt.Errorf("store %d metrics of job %d: %w", len(points), jobID, err)
	}
	return nil
}

// LastJobMetrics returns, for each of names that attempt of the job has reported,
// the point with the highest step stored.
func (s *Store) LastJobMetrics(ctx context.Context, jobID int64, attempt int, names []string) (map[string]models.JobMetric, error) {
	out := make(map[string]models.JobMetric, len(names))
	for _, name := range names {
		var last []models.JobMetric
		err := s.with(ctx).Where("job_id = ? AND name = ? AND attempt = ?", jobID, name, attempt).
			Order("step DESC").Limit(1).Find(&last).Error
		if err != nil {
			return nil, fmt.Errorf("last point of metric %s of job %d: %w", name, jobID, err)
		}
		if len(last) > 0 {
			last[0].At = last[0].At.UTC()
			out[name] = last[0]
		}
	}
	return out, nil
}

// JobMetricFilter selects a job's metrics: the names given (all when empty), of every
// attempt, at most Limit points (default 100,000).
type JobMetricFilter struct {
	JobID int64
	Names []string
	Limit int
}

// JobMetrics returns the points matching f ordered by name, attempt and step.
func (s *Store) JobMetrics(ctx context.Context, f JobMetricFilter) ([]models.JobMetric, error) {
	q := s.with(ctx).Where("job_id = ?", f.JobID)
	if len(f.Names) > 0 {
		q = q.Where("name IN ?", f.Names)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100000
	}
	var out []models.JobMetric
	if err := q.Order("name, attempt, step, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("metrics of job %d: %w", f.JobID, err)
	}
	for i := range out {
		out[i].At = out[i].At.UTC()
	}
	return out, nil
}
