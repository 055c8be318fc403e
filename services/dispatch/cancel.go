package dispatch

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// CancelJob cancels a job for actor. The job is cancelled at once; an attempt that
// runs is asked to stop (SIGTERM, then SIGKILL after the kill grace) and keeps its
// resources until its agent reports it ended. A finished job is ErrFinished.
func (s *Service) CancelJob(ctx context.Context, jobID int64, actor, message string) (*models.Job, error) {
	if message == "" {
		message = "cancelled by " + actor
	}
	return s.endJob(ctx, jobID, models.JobCancelled, "cancelled", "job.cancelled", actor, message)
}

// endJob ends a job in state to (cancelled or failed) with reason, audited as action:
// an attempt that runs is asked to stop and keeps its resources until its agent
// reports it ended. A finished job is ErrFinished.
func (s *Service) endJob(ctx context.Context, jobID int64, to, reason, action, actor, message string) (*models.Job, error) {
	var touched []int64
	var job *models.Job
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		job, err = tx.JobByID(ctx, jobID)
		if err != nil {
			return err
		}
		if models.IsTerminal(job.State) {
			return fmt.Errorf("%w: it %s", ErrFinished, job.State)
		}
		err = tx.TransitionJob(ctx, jobID, store.Transition{From: job.State, To: to, Reason: reason, Message: message, Actor: actor})
		if err != nil {
			return err
		}
		allocs, err := allocationsOfAttempt(ctx, tx, jobID, job.Attempt)
		if err != nil {
			return err
		}
		stop := agentapi.StopCancel
		now := s.now().UTC()
		for _, a := range allocs {
			ch := store.AllocationChange{State: models.AllocStopping, StopReason: &stop}
			switch a.State {
			case models.AllocEnded:
				continue
			case models.AllocPending:
				ch = store.AllocationChange{State: models.AllocEnded, StopReason: &stop, EndedAt: &now}
			}
			if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, ch); err != nil {
				return err
			}
			touched = append(touched, a.NodeID)
		}
		if job, err = tx.JobByID(ctx, jobID); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "job", ObjectID: strconv.FormatInt(jobID, 10),
			ProjectID: &job.ProjectID, Detail: map[string]any{"message": message, "stopping": len(touched)}})
	})
	if err != nil {
		return nil, fmt.Errorf("end job %d as %s: %w", jobID, to, err)
	}
	s.nodes.notify(touched...)
	s.Kick()
	return job, nil
}
