package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
// both; AfterID continues a read, and UpToID (when not 0) ends it; Limit defaults to
// 1000.
type LogFilter struct {
	JobID   int64
	Attempt int
	Stream  string
	AfterID int64
	UpToID  int64
	Limit   int
}

// logChunksOf is the query of the chunks f selects, Limit aside.
func (s *Store) logChunksOf(ctx context.Context, f LogFilter) *gorm.DB {
	q := s.with(ctx).Model(&models.JobLogChunk{}).Where("job_id = ? AND attempt = ? AND id > ?", f.JobID, f.Attempt, f.AfterID)
	if f.UpToID != 0 {
		q = q.Where("id <= ?", f.UpToID)
	}
	if f.Stream != "" {
		q = q.Where("stream = ?", f.Stream)
	}
	return q
}

// LogExtent returns the id of the last chunk f selects (0: none) and how many bytes
// the chunks hold, without reading them: an answer that sends them all says its length
// first.
func (s *Store) LogExtent(ctx context.Context, f LogFilter) (lastID, bytes int64, err error) {
	var out struct{ LastID, Bytes int64 }
	err = s.logChunksOf(ctx, f).Select("COALESCE(MAX(id), 0) AS last_id, COALESCE(SUM(LENGTH(data)), 0) AS bytes").Scan(&out).Error
	if err != nil {
		return 0, 0, fmt.Errorf("extent of the log of job %d attempt %d: %w", f.JobID, f.Attempt, err)
	}
	return out.LastID, out.Bytes, nil
}

// LogTailFrom returns where to start reading the chunks f selects so that what is read
// is their last maxBytes at most, in maxChunks at most: the id of the last chunk left
// out (f.AfterID when none is), and the bytes left out. f.UpToID is ignored.
func (s *Store) LogTailFrom(ctx context.Context, f LogFilter, maxBytes int64, maxChunks int) (afterID, skipped int64, err error) {
	f.UpToID = 0
	var rows []struct{ ID, Size int64 }
	err = s.logChunksOf(ctx, f).Select("id, LENGTH(data) AS size").Order("id DESC").Limit(maxChunks + 1).Scan(&rows).Error
	if err != nil {
		return 0, 0, fmt.Errorf("end of the log of job %d attempt %d: %w", f.JobID, f.Attempt, err)
	}
	var kept int64
	for i, r := range rows {
		if kept+r.Size > maxBytes || i == maxChunks {
			f.UpToID = r.ID
			_, skipped, err := s.LogExtent(ctx, f)
			return r.ID, skipped, err
		}
		kept += r.Size
	}
	return f.AfterID, 0, nil
}

// LogChunks returns the chunks matching f in the order they arrived.
func (s *Store) LogChunks(ctx context.Context, f LogFilter) ([]models.JobLogChunk, error) {
	q := s.logChunksOf(ctx, f)
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
		// Locked (on PostgreSQL; SQLite has one writer): each chunk is written back whole,
		// so a change made meanwhile (MaskOldLogs') would be undone.
		err := tx.with(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Where(`job_id = ? AND attempt = ? AND replica = ? AND stream = ? AND "offset" < ? AND "offset" + length(data) > ?`,
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

// LogStream names one stream of the output of one replica of an attempt.
type LogStream struct {
	Attempt int
	Replica int
	Stream  string
}

// LogStreams returns the streams a job has output in, by attempt, replica and stream.
func (s *Store) LogStreams(ctx context.Context, jobID int64) ([]LogStream, error) {
	var out []LogStream
	err := s.with(ctx).Model(&models.JobLogChunk{}).Distinct("attempt", "replica", "stream").Where("job_id = ?", jobID).
		Order("attempt, replica, stream").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("log streams of job %d: %w", jobID, err)
	}
	return out, nil
}

// LogChunksFrom returns up to limit chunks of one stream from offset from on, in offset
// order. In a transaction on PostgreSQL they stay locked until it ends, so that no one
// else writes them meanwhile.
func (s *Store) LogChunksFrom(ctx context.Context, jobID int64, ls LogStream, from int64, limit int) ([]models.JobLogChunk, error) {
	var out []models.JobLogChunk
	err := s.with(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).
		Where(`job_id = ? AND attempt = ? AND replica = ? AND stream = ? AND "offset" >= ?`, jobID, ls.Attempt, ls.Replica, ls.Stream, from).
		Order(`"offset"`).Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("log of job %d attempt %d %s from %d: %w", jobID, ls.Attempt, ls.Stream, from, err)
	}
	return out, nil
}

// SetLogChunkData writes data over the chunk with id.
func (s *Store) SetLogChunkData(ctx context.Context, id int64, data []byte) error {
	if err := s.with(ctx).Model(&models.JobLogChunk{}).Where("id = ?", id).Update("data", data).Error; err != nil {
		return fmt.Errorf("rewrite log chunk %d: %w", id, err)
	}
	return nil
}

// UnmaskedJobLogs returns the jobs whose output may hold their secret values in clear,
// by job id.
func (s *Store) UnmaskedJobLogs(ctx context.Context) ([]models.UnmaskedJobLog, error) {
	var out []models.UnmaskedJobLog
	if err := s.with(ctx).Order("job_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("jobs with unmasked output: %w", err)
	}
	return out, nil
}

// SetUnmaskedJobLogSwept records when the output of job was masked while it still ran.
func (s *Store) SetUnmaskedJobLogSwept(ctx context.Context, jobID int64, at time.Time) error {
	err := s.with(ctx).Model(&models.UnmaskedJobLog{}).Where("job_id = ?", jobID).Update("swept_at", at.UTC()).Error
	if err != nil {
		return fmt.Errorf("mark the output of job %d masked: %w", jobID, err)
	}
	return nil
}

// DeleteUnmaskedJobLog takes job off the jobs whose output may hold secrets in clear.
func (s *Store) DeleteUnmaskedJobLog(ctx context.Context, jobID int64) error {
	if err := s.with(ctx).Where("job_id = ?", jobID).Delete(&models.UnmaskedJobLog{}).Error; err != nil {
		return fmt.Errorf("take job %d off the jobs with unmasked output: %w", jobID, err)
	}
	return nil
}
