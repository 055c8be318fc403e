package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// ErrWrongState: the job is not in the state the action needs (hold a queued job,
// release a held one).
var ErrWrongState = errors.New("the job is not in a state that allows this")

// HoldJob keeps a queued job from being scheduled until it is released; actor is
// recorded on its event and audited. Only a queued job can be held (one that runs is
// cancelled, or stopped by governance): ErrWrongState otherwise.
func (s *Service) HoldJob(ctx context.Context, jobID int64, actor, message string) (*models.Job, error) {
	if message == "" {
		message = "held by " + actor + "; release it to queue it again"
	}
	return s.move(ctx, jobID, models.JobQueued, models.JobHeld, "held", actor, message, "job.held")
}

// ReleaseJob puts a held job back in the queue, where it keeps its place by age.
// ErrWrongState when it is not held.
func (s *Service) ReleaseJob(ctx context.Context, jobID int64, actor, message string) (*models.Job, error) {
	if message == "" {
		message = "released by " + actor
	}
	j, err := s.move(ctx, jobID, models.JobHeld, models.JobQueued, "released", actor, message, "job.released")
	if err == nil {
		s.Kick()
	}
	return j, err
}

// move changes a job from one state to another for actor, with its event and audit
// entry in one transaction.
func (s *Service) move(ctx context.Context, jobID int64, from, to, reason, actor, message, action string) (*models.Job, error) {
	var job *models.Job
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		j, err := tx.JobByID(ctx, jobID)
		if err != nil {
			return err
		}
		if j.State != from {
			return fmt.Errorf("%w: it is %s, not %s", ErrWrongState, j.State, from)
		}
		err = tx.TransitionJob(ctx, jobID, store.Transition{From: from, To: to, Reason: reason, Message: message, Actor: actor})
		if errors.Is(err, store.ErrStale) {
			return fmt.Errorf("%w: it changed meanwhile", ErrWrongState)
		}
		if err != nil {
			return err
		}
		if job, err = tx.JobByID(ctx, jobID); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "job", ObjectID: strconv.FormatInt(jobID, 10),
			ProjectID: &job.ProjectID, Detail: map[string]any{"message": message}})
	})
	if err != nil {
		return nil, fmt.Errorf("%s job %d: %w", reason, jobID, err)
	}
	return job, nil
}
