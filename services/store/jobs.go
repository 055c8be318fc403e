package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateJob inserts j as queued with its first event, in one transaction.
func (s *Store) CreateJob(ctx context.Context, j *models.Job, actor string) error {
	j.State = models.JobQueued
	if j.SubmittedAt.IsZero() {
		j.SubmittedAt = time.Now().UTC()
	}
	err := s.InTx(ctx, func(tx *Store) error {
		if err := translate(tx.with(ctx).Create(j).Error); err != nil {
			return err
		}
		return tx.with(ctx).Create(&models.JobEvent{
			JobID: j.ID, ToState: models.JobQueued, Reason: "submitted", Actor: actor,
		}).Error
	})
	if err != nil {
		return fmt.Errorf("create job %s: %w", j.Name, err)
	}
	return nil
}

// JobByID returns the job with id.
func (s *Store) JobByID(ctx context.Context, id int64) (*models.Job, error) {
	var j models.Job
	if err := translate(s.with(ctx).First(&j, id).Error); err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return &j, nil
}

// JobFilter selects jobs; zero fields select everything. Jobs come newest first,
// and BeforeID continues a page (keyset pagination: stays fast deep into the list).
type JobFilter struct {
	ProjectIDs []int64
	UserID     int64
	States     []string
	BeforeID   int64
	Limit      int
}

// Jobs returns the jobs matching f, newest first, at most f.Limit (default 50).
func (s *Store) Jobs(ctx context.Context, f JobFilter) ([]models.Job, error) {
	q := s.with(ctx).Model(&models.Job{})
	if len(f.ProjectIDs) > 0 {
		q = q.Where("project_id IN ?", f.ProjectIDs)
	}
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if len(f.States) > 0 {
		q = q.Where("state IN ?", f.States)
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []models.Job
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// Transition is one state change of a job.
type Transition struct {
	From, To string
	Reason   string
	Message  string
	Actor    string
	// Attempt, when non-zero, becomes the job's attempt: a new attempt is scheduled.
	Attempt int
	// Retries, when non-nil, becomes the job's count of retries used.
	Retries *int
	// ExitCode, when non-nil, is recorded as the job's exit code.
	ExitCode *int
}

// TransitionJob moves job id from t.From to t.To and records the event, atomically.
// It fails with ErrStale when the job is no longer in t.From, and refuses moves
// that the job state machine does not allow.
func (s *Store) TransitionJob(ctx context.Context, id int64, t Transition) error {
	if !models.CanTransition(t.From, t.To) {
		return fmt.Errorf("job %d: a job cannot move from %s to %s", id, t.From, t.To)
	}
	err := s.InTx(ctx, func(tx *Store) error {
		now := time.Now().UTC()
		updates := map[string]any{"state": t.To, "state_reason": t.Reason, "updated_at": now}
		switch {
		case t.To == models.JobRunning:
			updates["started_at"] = now
		case models.IsTerminal(t.To):
			updates["finished_at"] = now
		}
		if t.Attempt > 0 {
			updates["attempt"] = t.Attempt
		}
		if t.Retries != nil {
			updates["retries"] = *t.Retries
		}
		if t.ExitCode != nil {
			updates["exit_code"] = *t.ExitCode
		}
		res := tx.with(ctx).Model(&models.Job{}).Where("id = ? AND state = ?", id, t.From).Updates(updates)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			if _, err := tx.JobByID(ctx, id); err != nil {
				return err
			}
			return fmt.Errorf("%w: job is no longer %s", ErrStale, t.From)
		}
		var attempt int
		if err := tx.with(ctx).Model(&models.Job{}).Where("id = ?", id).Pluck("attempt", &attempt).Error; err != nil {
			return err
		}
		return tx.with(ctx).Create(&models.JobEvent{
			JobID: id, Attempt: attempt, FromState: t.From, ToState: t.To,
			Reason: t.Reason, Message: t.Message, Actor: t.Actor,
		}).Error
	})
	if err != nil {
		return fmt.Errorf("move job %d from %s to %s: %w", id, t.From, t.To, err)
	}
	return nil
}

// JobEvents returns the events of a job, oldest first.
func (s *Store) JobEvents(ctx context.Context, jobID int64) ([]models.JobEvent, error) {
	var out []models.JobEvent
	if err := s.with(ctx).Where("job_id = ?", jobID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("events of job %d: %w", jobID, err)
	}
	return out, nil
}

// JobCountsByState returns how many jobs are in each state.
func (s *Store) JobCountsByState(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		State string
		N     int
	}
	if err := s.with(ctx).Model(&models.Job{}).Select("state, COUNT(*) AS n").Group("state").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count jobs by state: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}
