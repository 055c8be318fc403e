package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// EndedJob is a job that ended, as the output retention reads it.
type EndedJob struct {
	ID         int64
	ProjectID  int64
	Attempt    int
	State      string
	FinishedAt time.Time
}

// EndedJobsWithOutput returns up to limit jobs that ended at or after from and before
// to and still have output stored, the earliest ended first.
func (s *Store) EndedJobsWithOutput(ctx context.Context, from, to time.Time, limit int) ([]EndedJob, error) {
	var out []EndedJob
	err := s.with(ctx).Model(&models.Job{}).Select("id, project_id, attempt, state, finished_at").
		Where("finished_at >= ? AND finished_at < ? AND state IN ?", from.UTC(), to.UTC(),
			[]string{models.JobSucceeded, models.JobFailed, models.JobCancelled}).
		Where("EXISTS (SELECT 1 FROM job_log_chunks c WHERE c.job_id = jobs.id)").
		Order("finished_at, id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("jobs that ended between %s and %s with output: %w", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

// deleteChunksAtOnce bounds the log chunks one statement deletes: a job's output can
// be gigabytes, and on SQLite a transaction holds every other writer back.
const deleteChunksAtOnce = 1000

// DeleteJobOutput deletes the stored output of jobs. First, in one transaction with what
// also does (the audit), it notes on the timeline of each job that has no note of reason
// yet why its output goes, by actor, and deletes the clear tails and masking marks of
// all; also is given the jobs noted now. Then it deletes their log chunks, a bounded
// number a statement. A pass cut off in between leaves jobs noted with output left,
// which the next takes again without noting them twice. It returns how many chunks it
// deleted.
func (s *Store) DeleteJobOutput(ctx context.Context, jobs []EndedJob, reason, message, actor string, also func(tx *Store, noted []EndedJob) error) (int64, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	fail := func(err error) error {
		return fmt.Errorf("delete the output of %d jobs (%d to %d): %w", len(jobs), ids[0], ids[len(ids)-1], err)
	}
	err := s.atomically(ctx, func(tx *Store) error {
		var done []int64
		if err := tx.with(ctx).Model(&models.JobEvent{}).Where("job_id IN ? AND reason = ?", ids, reason).Distinct().Pluck("job_id", &done).Error; err != nil {
			return err
		}
		var noted []EndedJob
		var events []models.JobEvent
		for _, j := range jobs {
			if !slices.Contains(done, j.ID) {
				noted = append(noted, j)
				events = append(events, models.JobEvent{JobID: j.ID, Attempt: j.Attempt, FromState: j.State, ToState: j.State, Reason: reason, Message: message, Actor: actor})
			}
		}
		if len(events) > 0 {
			if err := tx.with(ctx).Create(&events).Error; err != nil {
				return err
			}
		}
		for _, m := range []any{&models.JobLogTail{}, &models.UnmaskedJobLog{}} {
			if err := tx.with(ctx).Where("job_id IN ?", ids).Delete(m).Error; err != nil {
				return err
			}
		}
		return also(tx, noted)
	})
	if err != nil {
		return 0, fail(err)
	}
	var chunks int64
	for {
		res := s.with(ctx).Where("id IN (?)", s.with(ctx).Model(&models.JobLogChunk{}).Select("id").Where("job_id IN ?", ids).Limit(deleteChunksAtOnce)).
			Delete(&models.JobLogChunk{})
		if res.Error != nil {
			return chunks, fail(res.Error)
		}
		if res.RowsAffected == 0 {
			return chunks, nil
		}
		chunks += res.RowsAffected
	}
}
