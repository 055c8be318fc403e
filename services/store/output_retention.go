package store

import (
	"context"
	"fmt"
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

// DeleteJobOutput deletes the stored output of jobs (their log chunks, with the clear
// tails and the masking marks that go with them) and notes on each job's timeline why,
// by actor, in one transaction with what also does (the audit). It returns how many
// chunks it deleted.
func (s *Store) DeleteJobOutput(ctx context.Context, jobs []EndedJob, reason, message, actor string, also func(tx *Store) error) (int64, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(jobs))
	events := make([]models.JobEvent, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
		events[i] = models.JobEvent{JobID: j.ID, Attempt: j.Attempt, FromState: j.State, ToState: j.State, Reason: reason, Message: message, Actor: actor}
	}
	var chunks int64
	err := s.atomically(ctx, func(tx *Store) error {
		res := tx.with(ctx).Where("job_id IN ?", ids).Delete(&models.JobLogChunk{})
		if res.Error != nil {
			return res.Error
		}
		chunks = res.RowsAffected
		for _, m := range []any{&models.JobLogTail{}, &models.UnmaskedJobLog{}} {
			if err := tx.with(ctx).Where("job_id IN ?", ids).Delete(m).Error; err != nil {
				return err
			}
		}
		if err := tx.with(ctx).Create(&events).Error; err != nil {
			return err
		}
		return also(tx)
	})
	if err != nil {
		return 0, fmt.Errorf("delete the output of %d jobs (%d to %d): %w", len(jobs), ids[0], ids[len(ids)-1], err)
	}
	return chunks, nil
}
