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

// stopAttempt asks every active allocation of the job's current attempt to stop
// for reason, moving the job to preempting for actor: it will go back to the queue
// (or be held), to resume from its checkpoint, once they ended. An allocation not
// started yet ends at once. It returns the nodes whose leases changed.
func (s *Service) stopAttempt(ctx context.Context, tx *store.Store, job *models.Job, reason, actor, message string) ([]int64, error) {
	if job.State != models.JobRunning && job.State != models.JobScheduled {
		return nil, fmt.Errorf("%w: job %d is %s, not running", store.ErrStale, job.ID, job.State)
	}
	err := tx.TransitionJob(ctx, job.ID, store.Transition{From: job.State, To: models.JobPreempting, Reason: reason, Message: message, Actor: actor})
	if err != nil {
		return nil, err
	}
	allocs, err := allocationsOfAttempt(ctx, tx, job.ID, job.Attempt)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	var nodes []int64
	for _, a := range allocs {
		ch := store.AllocationChange{State: models.AllocStopping, StopReason: &reason}
		switch a.State {
		case models.AllocEnded, models.AllocStopping:
			continue
		case models.AllocPending:
			ch = store.AllocationChange{State: models.AllocEnded, StopReason: &reason, EndedAt: &now}
		}
		if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, ch); err != nil {
			return nil, err
		}
		nodes = append(nodes, a.NodeID)
	}
	more, err := s.settle(ctx, tx, job.ID, job.Attempt, "")
	return append(nodes, more...), err
}

// CheckpointAndStop stops a running job for a governance rule: the agent asks it
// to checkpoint (with its class's grace), then stops it, and the job is held
// until someone releases it, to resume from its checkpoint. It implements
// governance.Stopper; the actor of ctx is audited.
func (s *Service) CheckpointAndStop(ctx context.Context, jobID int64, reason string) error {
	return s.governanceStop(ctx, jobID, agentapi.StopGovernance, "job.stopped", reason)
}

// CheckpointAndRelease stops a running job for a governance rule as CheckpointAndStop
// does, but the job goes back to the queue rather than being held: its GPUs return to
// the pool now, and it resumes from its checkpoint when it is scheduled again. It
// implements governance.Stopper; the actor of ctx is audited.
func (s *Service) CheckpointAndRelease(ctx context.Context, jobID int64, reason string) error {
	return s.governanceStop(ctx, jobID, agentapi.StopRelease, "job.released", reason)
}

func (s *Service) governanceStop(ctx context.Context, jobID int64, stopReason, action, reason string) error {
	var touched []int64
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		job, err := tx.JobByID(ctx, jobID)
		if err != nil {
			return err
		}
		if touched, err = s.stopAttempt(ctx, tx, job, stopReason, "system", reason); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "job", ObjectID: strconv.FormatInt(jobID, 10),
			ProjectID: &job.ProjectID, Detail: map[string]string{"reason": reason}})
	})
	if err != nil {
		return fmt.Errorf("checkpoint and %s job %d: %w", stopReason, jobID, err)
	}
	s.nodes.notify(touched...)
	return nil
}

// Preemption evicts a running job for a pending one; the scheduler decides it.
type Preemption struct {
	JobID  int64
	Reason string // in words, e.g. "preempted by job 12 (production)"
	For    int64  // the job it makes room for
}

// preempt applies the plan's preemptions; a victim that is no longer running or
// not preemptible is skipped. It returns the nodes whose leases changed.
func (s *Service) preempt(ctx context.Context, tx *store.Store, ps []Preemption) ([]int64, error) {
	var nodes []int64
	for _, p := range ps {
		job, err := tx.JobByID(ctx, p.JobID)
		if err != nil {
			return nil, err
		}
		if !job.Preemptible {
			s.log.Error("scheduler preempted a job that is not preemptible", "job", job.ID)
			continue
		}
		touched, err := s.stopAttempt(ctx, tx, job, agentapi.StopPreempt, "system", p.Reason)
		if errors.Is(err, store.ErrStale) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.audit.In(tx).Append(audit.WithActor(ctx, audit.System()), audit.Entry{Action: "job.preempted", ObjectType: "job",
			ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID, Detail: map[string]string{"reason": p.Reason}}); err != nil {
			return nil, err
		}
		nodes = append(nodes, touched...)
	}
	return nodes, nil
}

// stopDrainedNodes stops, with the drain reason and grace, the attempts still
// running on draining nodes whose deadline passed.
func (s *Service) stopDrainedNodes(ctx context.Context) error {
	nodes, err := s.store.NodesInStates(ctx, []string{models.NodeDraining})
	if err != nil {
		return err
	}
	now := s.now().UTC()
	for _, n := range nodes {
		if n.DrainDeadline == nil || now.Before(*n.DrainDeadline) {
			continue
		}
		var touched []int64
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			allocs, err := tx.ActiveAllocations(ctx, n.ID)
			if err != nil {
				return err
			}
			for _, a := range allocs {
				job, err := tx.JobByID(ctx, a.JobID)
				if err != nil {
					return err
				}
				if job.Attempt != a.Attempt || a.State == models.AllocStopping {
					continue
				}
				why := fmt.Sprintf("node %s is draining and its deadline passed", n.Name)
				more, err := s.stopAttempt(ctx, tx, job, agentapi.StopDrain, "system", why)
				if errors.Is(err, store.ErrStale) {
					continue
				}
				if err != nil {
					return err
				}
				touched = append(touched, more...)
				err = s.audit.In(tx).Append(audit.WithActor(ctx, audit.System()), audit.Entry{Action: "job.stopped", ObjectType: "job",
					ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID, Detail: map[string]string{"reason": why}})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("stop jobs of draining node %s: %w", n.Name, err)
		}
		s.nodes.notify(touched...)
	}
	return nil
}

// Node states an admin may set, and from which.
var adminNodeMoves = map[string][]string{
	models.NodeCordoned: {models.NodeReady, models.NodeDraining},
	models.NodeDraining: {models.NodeReady, models.NodeCordoned},
	models.NodeReady:    {models.NodeCordoned, models.NodeDraining, models.NodeDown},
	models.NodeDown:     {models.NodeCordoned, models.NodeDraining},
}

// SetNodeState is an admin's action on a node, audited with the actor of ctx:
// cordon (no new work), drain (no new work; what runs is checkpoint-stopped at
// deadline and resumes elsewhere), ready (take work again) or down (out of
// service; only once nothing runs there). A node already ready, cordoned or down is
// left as it is when asked for that state again, and nothing is audited: a script
// may say what it wants without first reading what is. Draining again is refused,
// as it would move the deadline of what runs.
func (s *Service) SetNodeState(ctx context.Context, name, state, reason string, deadline time.Time) (*models.Node, error) {
	from, ok := adminNodeMoves[state]
	if !ok {
		return nil, models.Invalid("state", "%q is not a state an admin sets: want ready, cordoned, draining or down", state)
	}
	var node *models.Node
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if node, err = tx.NodeByName(ctx, name); err != nil {
			return err
		}
		if err := notSlurm(node, "state"); err != nil {
			return err
		}
		if err := notRemoved(node, "state"); err != nil {
			return err
		}
		if node.State == state && state != models.NodeDraining {
			return errUnchanged
		}
		if state == models.NodeDown {
			active, err := tx.ActiveAllocations(ctx, node.ID)
			if err != nil {
				return err
			}
			if len(active) > 0 {
				return models.Invalid("state", "node %s still runs %d allocations: drain it first", name, len(active))
			}
		}
		if err := tx.SetNodeState(ctx, node.ID, from, state, reason); errors.Is(err, store.ErrStale) {
			return models.Invalid("state", "node %s is %s; it cannot become %s", name, node.State, state)
		} else if err != nil {
			return err
		}
		node.State, node.StateReason, node.DrainDeadline = state, reason, nil
		if state == models.NodeDraining {
			d := deadline.UTC()
			node.DrainDeadline = &d
		}
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node." + state, ObjectType: "node", ObjectID: name,
			Detail: map[string]any{"reason": reason, "drain_deadline": node.DrainDeadline}})
	})
	if errors.Is(err, errUnchanged) {
		return node, nil
	}
	if err != nil {
		return nil, fmt.Errorf("set node %s %s: %w", name, state, err)
	}
	s.Kick()
	return node, nil
}

// errUnchanged ends a transaction that found nothing to change.
var errUnchanged = errors.New("nothing to change")
