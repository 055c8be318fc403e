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

// LogTail returns what is kept in clear of the end of one stream (ErrNotFound: nothing).
func (s *Store) LogTail(ctx context.Context, jobID int64, attempt, replica int, stream string) (*models.JobLogTail, error) {
	var t models.JobLogTail
	err := s.with(ctx).Where("job_id = ? AND attempt = ? AND replica = ? AND stream = ?", jobID, attempt, replica, stream).Take(&t).Error
	if err := translate(err); err != nil {
		return nil, fmt.Errorf("log tail of job %d attempt %d %s: %w", jobID, attempt, stream, err)
	}
	return &t, nil
}

// SetLogTail keeps t as the tail of its stream, in place of any earlier one; a tail
// without data is none.
func (s *Store) SetLogTail(ctx context.Context, t *models.JobLogTail) error {
	err := s.atomically(ctx, func(tx *Store) error {
		err := tx.with(ctx).Where("job_id = ? AND attempt = ? AND replica = ? AND stream = ?", t.JobID, t.Attempt, t.Replica, t.Stream).
			Delete(&models.JobLogTail{}).Error
		if err != nil || len(t.Data) == 0 {
			return err
		}
		return tx.with(ctx).Create(t).Error
	})
	if err != nil {
		return fmt.Errorf("keep log tail of job %d attempt %d %s: %w", t.JobID, t.Attempt, t.Stream, err)
	}
	return nil
}

// RewriteLog writes data over the stored bytes of one stream from offset at on; bytes
// not stored yet are left out.
func (s *Store) RewriteLog(ctx context.Context, jobID int64, attempt, replica int, stream string, at int64, data []byte) error {
	err := s.atomically(ctx, func(tx *Store) error {
		var chunks []models.JobLogChunk
		err := tx.with(ctx).Where(`job_id = ? AND attempt = ? AND replica = ? AND stream = ? AND "offset" < ? AND "offset" + length(data) > ?`,
			jobID, attempt, replica, stream, at+int64(len(data)), at).Find(&chunks).Error
		if err != nil {
			return err
		}
		for _, c := range chunks {
			from := max(at, c.Offset)
			to := min(at+int64(len(data)), c.Offset+int64(len(c.Data)))
			copy(c.Data[from-c.Offset:to-c.Offset], data[from-at:to-at])
			if err := tx.with(ctx).Model(&models.JobLogChunk{}).Where("id = ?", c.ID).Update("data", c.Data).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rewrite log of job %d attempt %d %s at %d: %w", jobID, attempt, stream, at, err)
	}
	return nil
}
