package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/store"
)

// Report applies an agent's report that an attempt started or exited. A report
// of an attempt that is not current on this node is refused with ErrStaleAttempt:
// the agent must stop it. Repeating a report that was applied is harmless.
func (s *Service) Report(ctx context.Context, node *models.Node, r agentapi.Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	ctx = asNode(ctx, node.Name)
	now := s.now().UTC()
	var touched []int64
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		a, job, err := fence(ctx, tx, node, r.AttemptRef)
		if err != nil {
			return err
		}
		if a.State == models.AllocEnded {
			if r.Event == agentapi.EventExited && a.ExitCode != nil {
				return nil // a retried report that was applied already
			}
			return staleErr(r.AttemptRef, "the server ended it: "+endedBecause(a))
		}
		if r.Event == agentapi.EventStarted {
			return s.markStarted(ctx, tx, node, a, job, now)
		}
		err = tx.UpdateAllocation(ctx, a.ID, []string{a.State}, store.AllocationChange{
			State: models.AllocEnded, ExitCode: r.ExitCode, EndedAt: &now,
		})
		if err != nil {
			return err
		}
		// The agent's words may quote the job's environment (a container runtime's error).
		detail, err := maskedText(ctx, tx, job.ID, exitDetail(r))
		if err != nil {
			return err
		}
		touched, err = s.settle(ctx, tx, job.ID, a.Attempt, detail)
		return err
	})
	if err != nil {
		return fmt.Errorf("report %s of %s from node %s: %w", r.Event, r.AttemptRef, node.Name, err)
	}
	s.nodes.notify(touched...)
	if r.Event == agentapi.EventExited {
		s.signalEnded()
		s.Kick()
	}
	return nil
}

// fence returns the allocation and job an agent speaks about, or ErrStaleAttempt
// when the attempt has no allocation on this node or the job has moved on.
func fence(ctx context.Context, tx *store.Store, node *models.Node, ref agentapi.AttemptRef) (*models.Allocation, *models.Job, error) {
	a, err := tx.AllocationByAttempt(ctx, ref.JobID, ref.Attempt, ref.Replica)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.NodeID != node.ID {
		return nil, nil, staleErr(ref, "it has no allocation on this node")
	}
	if err != nil {
		return nil, nil, err
	}
	job, err := tx.JobByID(ctx, ref.JobID)
	if err != nil {
		return nil, nil, err
	}
	if job.Attempt != ref.Attempt {
		return nil, nil, staleErr(ref, fmt.Sprintf("the job is at attempt %d", job.Attempt))
	}
	return a, job, nil
}

func staleErr(ref agentapi.AttemptRef, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrStaleAttempt, ref, why)
}

// markStarted marks an allocation running, and the job running once every replica runs.
func (s *Service) markStarted(ctx context.Context, tx *store.Store, node *models.Node, a *models.Allocation, job *models.Job, now time.Time) error {
	if a.StartedAt != nil {
		return nil
	}
	state := models.AllocRunning
	if a.State == models.AllocStopping {
		state = models.AllocStopping
	}
	if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, store.AllocationChange{State: state, StartedAt: &now}); err != nil {
		return err
	}
	if job.State != models.JobScheduled {
		return nil
	}
	allocs, err := allocationsOfAttempt(ctx, tx, job.ID, a.Attempt)
	if err != nil {
		return err
	}
	for _, o := range allocs {
		if o.StartedAt == nil && o.ID != a.ID {
			return nil
		}
	}
	msg := fmt.Sprintf("attempt %d started on node %s", a.Attempt, node.Name)
	if len(allocs) > 1 {
		msg = fmt.Sprintf("all %d replicas of attempt %d started", len(allocs), a.Attempt)
	}
	return tx.TransitionJob(ctx, job.ID, store.Transition{
		From: models.JobScheduled, To: models.JobRunning, Reason: "started", Message: msg, Actor: "node:" + node.Name,
	})
}

func allocationsOfAttempt(ctx context.Context, tx *store.Store, jobID int64, attempt int) ([]models.Allocation, error) {
	all, err := tx.AllocationsOfJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	var out []models.Allocation
	for _, a := range all {
		if a.Attempt == attempt {
			out = append(out, a)
		}
	}
	return out, nil
}

// exitDetail is what a person reads about how an attempt exited.
func exitDetail(r agentapi.Report) string {
	var parts []string
	if r.Signal != "" {
		parts = append(parts, "killed by "+r.Signal)
	}
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	return strings.Join(parts, "; ")
}
