package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// ErrWrongState: the job is not in the state the action needs (hold a queued or
// running job, release a held one).
var ErrWrongState = errors.New("the job is not in a state that allows this")

// HoldJob keeps a job from running until it is released; actor is recorded on its
// events and audited. A queued job is held at once. A scheduled or running one is
// asked to checkpoint and stop, with its class's grace as for a preemption, and is
// held rather than requeued once its attempt ended (the job is preempting until
// then); released, it resumes from its checkpoint. One placed on a Slurm pool that
// has not started is held at once, its Slurm job held in Slurm's queue. ErrWrongState
// for a job that is already held, stopping or finished.
func (s *Service) HoldJob(ctx context.Context, jobID int64, actor, message string) (*models.Job, error) {
	var job *models.Job
	var touched []int64
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		j, err := tx.JobByID(ctx, jobID)
		if err != nil {
			return err
		}
		switch j.State {
		case models.JobQueued:
			if message == "" {
				message = "held by " + actor + "; release it to queue it again"
			}
			err = tx.TransitionJob(ctx, jobID, store.Transition{From: j.State, To: models.JobHeld, Reason: "held", Message: message, Actor: actor})
		case models.JobScheduled, models.JobRunning:
			allocs, waiting, werr := waitingInSlurm(ctx, tx, j)
			switch {
			case werr != nil:
				return werr
			case waiting:
				// Nothing ran: the reservation ends, and the Slurm pools hold its
				// Slurm job in Slurm's queue (scontrol hold).
				if message == "" {
					message = "held by " + actor + "; its Slurm job is held in Slurm's queue until it is released"
				}
				if err = endAllocations(ctx, tx, allocs, stopHeldInSlurm, s.now().UTC()); err == nil {
					err = tx.TransitionJob(ctx, jobID, store.Transition{From: j.State, To: models.JobHeld, Reason: "held", Message: message, Actor: actor})
				}
			default:
				if message == "" {
					message = fmt.Sprintf("held by %s: attempt %d checkpoints and stops, then the job stays held until released", actor, j.Attempt)
				}
				touched, err = s.stopAttempt(ctx, tx, j, agentapi.StopHold, actor, message)
			}
		default:
			return fmt.Errorf("%w: it is %s; only a queued, scheduled or running job can be held", ErrWrongState, j.State)
		}
		if errors.Is(err, store.ErrStale) {
			return fmt.Errorf("%w: it changed meanwhile", ErrWrongState)
		}
		if err != nil {
			return err
		}
		if job, err = tx.JobByID(ctx, jobID); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job.held", ObjectType: "job", ObjectID: strconv.FormatInt(jobID, 10),
			ProjectID: &job.ProjectID, Detail: map[string]any{"message": message, "stopping": len(touched)}})
	})
	if err != nil {
		return nil, fmt.Errorf("hold job %d: %w", jobID, err)
	}
	s.nodes.notify(touched...)
	if job.State == models.JobHeld {
		s.Kick() // what it reserved is free for others
	}
	return job, nil
}

// stopHeldInSlurm ends the allocations of a job held while it waited in Slurm's
// queue: the Slurm pools hold its Slurm job there (scontrol hold) until it is
// released.
const stopHeldInSlurm = "held-in-slurm"

// waitingInSlurm returns the allocations of a scheduled job's attempt, and whether
// they are all on a Slurm pool's nodes and none has started: the job waits to be
// submitted, or waits in Slurm's queue (a start reaches Gantry with the run).
func waitingInSlurm(ctx context.Context, tx *store.Store, j *models.Job) ([]models.Allocation, bool, error) {
	if j.State != models.JobScheduled {
		return nil, false, nil
	}
	allocs, err := allocationsOfAttempt(ctx, tx, j.ID, j.Attempt)
	if err != nil || len(allocs) == 0 {
		return nil, false, err
	}
	for _, a := range allocs {
		if a.State != models.AllocPending {
			return nil, false, nil
		}
		n, err := tx.NodeByID(ctx, a.NodeID)
		if err != nil {
			return nil, false, err
		}
		if n.Runtime != models.RuntimeSlurm {
			return nil, false, nil
		}
	}
	return allocs, true, nil
}

// endAllocations ends allocations that never started, for reason.
func endAllocations(ctx context.Context, tx *store.Store, allocs []models.Allocation, reason string, now time.Time) error {
	for _, a := range allocs {
		err := tx.UpdateAllocation(ctx, a.ID, []string{models.AllocPending}, store.AllocationChange{State: models.AllocEnded, StopReason: &reason, EndedAt: &now})
		if err != nil {
			return err
		}
	}
	return nil
}

// holdStopped holds a job whose attempt checkpointed and stopped because a person
// held it while it ran, in the name of who held it.
func (s *Service) holdStopped(ctx context.Context, tx *store.Store, job *models.Job) error {
	evs, err := tx.JobEvents(ctx, job.ID)
	if err != nil {
		return err
	}
	actor := "system"
	for _, ev := range evs {
		if ev.ToState == models.JobPreempting && ev.Reason == agentapi.StopHold {
			actor = ev.Actor
		}
	}
	return s.decide(ctx, tx, job, store.Transition{From: job.State, To: models.JobHeld, Reason: "held", Actor: actor,
		Message: fmt.Sprintf("held by %s: attempt %d stopped; release it to resume from its checkpoint", actor, job.Attempt)})
}

// ReleaseJob puts a held job back in the queue, where it keeps its place by age. A
// job that was held in Slurm's queue is placed again by the scheduler; placed on the
// same pool, its held Slurm job is released (scontrol release) rather than submitted
// anew. ErrWrongState when it is not held.
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
