package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// jobMetricColumns are the columns InsertJobMetrics writes.
var jobMetricColumns = []string{"job_id", "attempt", "step", "name", "value", "at"}

// InsertJobMetrics appends metric points; when checkpointAt is set it also moves the
// job's last checkpoint time forward to it (never back), in the same transaction.
// It joins the caller's transaction when s is bound to one.
func (s *Store) InsertJobMetrics(ctx context.Context, jobID int64, points []models.JobMetric, checkpointAt *time.Time) error {
	err := s.atomically(ctx, func(tx *Store) error {
		err := tx.insertRows(ctx, "job_metrics", jobMetricColumns, len(points), func(i int) []any {
			p := &points[i]
			return []any{jobID, p.Attempt, p.Step, p.Name, p.Value, p.At.UTC()}
		})
		if err != nil {
			return err
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
		err := s.read(ctx).Where("job_id = ? AND name = ? AND attempt = ?", jobID, name, attempt).
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

// lastMetricJobsPerQuery bounds the jobs one query of LastJobMetricOfJobs asks about.
const lastMetricJobsPerQuery = 200

// LastJobMetricOfJobs returns, for each job of attempts (job id to attempt) that has
// reported metric name in that attempt, the point with the highest step stored: one
// index probe per job, in one round trip for up to 200 jobs.
func (s *Store) LastJobMetricOfJobs(ctx context.Context, name string, attempts map[int64]int) (map[int64]models.JobMetric, error) {
	ids := slices.Sorted(maps.Keys(attempts))
	out := make(map[int64]models.JobMetric, len(ids))
	for start := 0; start < len(ids); start += lastMetricJobsPerQuery {
		chunk := ids[start:min(start+lastMetricJobsPerQuery, len(ids))]
		parts := make([]string, len(chunk))
		args := make([]any, 0, 3*len(chunk))
		for i, id := range chunk {
			parts[i] = fmt.Sprintf(`SELECT * FROM (SELECT id, job_id, attempt, step, name, value, at FROM job_metrics
	WHERE job_id = ? AND name = ? AND attempt = ? ORDER BY step DESC LIMIT 1) AS last%d`, i)
			args = append(args, id, name, attempts[id])
		}
		var last []models.JobMetric
		if err := s.read(ctx).Raw(strings.Join(parts, " UNION ALL "), args...).Scan(&last).Error; err != nil {
			return nil, fmt.Errorf("last point of metric %s of %d jobs: %w", name, len(chunk), err)
		}
		for _, m := range last {
			m.At = m.At.UTC()
			out[m.JobID] = m
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
	q := s.read(ctx).Where("job_id = ?", f.JobID)
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
