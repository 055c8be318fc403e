package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// LogEnd returns the end of what is stored of one stream of one replica of an
// attempt: the offset the next chunk must start at.
func (s *Store) LogEnd(ctx context.Context, jobID int64, attempt, replica int, stream string) (int64, error) {
	var last struct {
		Offset int64
		Size   int64
	}
	err := s.with(ctx).Model(&models.JobLogChunk{}).Select(`"offset", length(data) AS size`).
		Where("job_id = ? AND attempt = ? AND replica = ? AND stream = ?", jobID, attempt, replica, stream).
		Order(`"offset" DESC`).Limit(1).Scan(&last).Error
	if err != nil {
		return 0, fmt.Errorf("log end of job %d attempt %d %s: %w", jobID, attempt, stream, err)
	}
	return last.Offset + last.Size, nil
}

// CreateLogChunk stores one chunk; a chunk already stored at that offset is ErrConflict.
func (s *Store) CreateLogChunk(ctx context.Context, c *models.JobLogChunk) error {
	if err := translate(s.with(ctx).Create(c).Error); err != nil {
		return fmt.Errorf("store log chunk of job %d at %s:%d: %w", c.JobID, c.Stream, c.Offset, err)
	}
	return nil
}

// LogFilter selects log chunks of one attempt of a job. An empty Stream selects
// both; AfterID continues a read; Limit defaults to 1000.
type LogFilter struct {
	JobID   int64
	Attempt int
	Stream  string
	AfterID int64
	Limit   int
}

// LogChunks returns the chunks matching f in the order they arrived.
func (s *Store) LogChunks(ctx context.Context, f LogFilter) ([]models.JobLogChunk, error) {
	q := s.with(ctx).Where("job_id = ? AND attempt = ? AND id > ?", f.JobID, f.Attempt, f.AfterID)
	if f.Stream != "" {
		q = q.Where("stream = ?", f.Stream)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var out []models.JobLogChunk
	if err := q.Order("id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("log of job %d attempt %d: %w", f.JobID, f.Attempt, err)
	}
	return out, nil
}
