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

// Stop reasons the server sets on allocations it ends itself.
const (
	endNodeLost     = "node-lost"
	endNodeRejoined = "node-rejoined"
)

// settle decides what becomes of a job once an allocation of its attempt ended:
// while other replicas still run, a failed one stops them; when all have ended,
// the job succeeds, fails, or goes back to the queue. It returns the nodes whose
// leases changed. detail says how the last allocation ended, for people.
func (s *Service) settle(ctx context.Context, tx *store.Store, jobID int64, attempt int, detail string) ([]int64, error) {
	job, err := tx.JobByID(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if job.Attempt != attempt || models.IsTerminal(job.State) || job.State == models.JobQueued || job.State == models.JobHeld {
		return nil, nil
	}
	allocs, err := allocationsOfAttempt(ctx, tx, jobID, attempt)
	if err != nil {
		return nil, err
	}
	var live []models.Allocation
	var failed *models.Allocation
	requeue := ""
	for i, a := range allocs {
		switch {
		case a.State != models.AllocEnded:
			live = append(live, a)
		case checkpoints(a.StopReason):
			requeue = a.StopReason
		case failedEnd(a) && failed == nil:
			failed = &allocs[i]
		}
	}
	if len(live) > 0 {
		if failed == nil {
			return nil, nil
		}
		return s.stopReplicas(ctx, tx, live)
	}
	switch {
	case failed != nil:
		return nil, s.fail(ctx, tx, job, failed, detail)
	case requeue == agentapi.StopHold:
		return nil, s.holdStopped(ctx, tx, job)
	case requeue != "":
		reason, msg := "preempted", fmt.Sprintf("attempt %d was preempted; the job waits to resume from its checkpoint", attempt)
		switch requeue {
		case agentapi.StopDrain:
			reason, msg = "drained", fmt.Sprintf("attempt %d stopped because its node drains; the job waits to resume from its checkpoint", attempt)
		case agentapi.StopGovernance:
			reason, msg = "governance", fmt.Sprintf("attempt %d was stopped by a governance rule", attempt)
		case agentapi.StopRelease:
			reason, msg = "released", fmt.Sprintf("attempt %d was stopped by a governance rule to give its idle GPUs back; the job waits to resume from its checkpoint", attempt)
		case agentapi.StopReclaim:
			reason, msg = "reclaimed", fmt.Sprintf("attempt %d stopped because its spot node is reclaimed; the job waits to resume from its checkpoint elsewhere", attempt)
		}
		err := s.decide(ctx, tx, job, store.Transition{From: job.State, To: models.JobQueued, Reason: reason, Message: msg, Actor: "system"})
		if err != nil || requeue != agentapi.StopGovernance {
			return nil, err
		}
		return nil, s.decide(ctx, tx, job, store.Transition{From: models.JobQueued, To: models.JobHeld, Reason: reason, Actor: "system",
			Message: "held after a governance stop; release it to resume from its checkpoint"})
	}
	zero := 0
	return nil, s.decide(ctx, tx, job, store.Transition{
		From: job.State, To: models.JobSucceeded, Reason: "succeeded", ExitCode: &zero, Actor: "system",
		Message: withDetail(fmt.Sprintf("attempt %d exited with code 0", attempt), detail),
	})
}

// failedEnd reports whether an allocation ended in failure of its own: lost with
// its node, or exited with a non-zero status without being asked to stop.
func failedEnd(a models.Allocation) bool {
	switch a.StopReason {
	case endNodeLost, endNodeRejoined:
		return true
	case "":
		return a.ExitCode == nil || *a.ExitCode != 0
	}
	return false
}

// fail requeues the job when it has retries left, and fails it otherwise.
func (s *Service) fail(ctx context.Context, tx *store.Store, job *models.Job, a *models.Allocation, detail string) error {
	reason, what := "failed", endedBecause(a)
	if a.StopReason != "" {
		reason = a.StopReason
	}
	what = withDetail(fmt.Sprintf("attempt %d %s", a.Attempt, what), detail)
	if job.Retries < job.MaxRetries {
		used := job.Retries + 1
		return s.decide(ctx, tx, job, store.Transition{
			From: job.State, To: models.JobQueued, Reason: reason, Retries: &used, Actor: "system",
			Message: fmt.Sprintf("%s; retry %d of %d", what, used, job.MaxRetries),
		})
	}
	msg := what
	if job.MaxRetries > 0 {
		msg = what + "; " + retriesUsed(job.MaxRetries)
	}
	return s.decide(ctx, tx, job, store.Transition{
		From: job.State, To: models.JobFailed, Reason: reason, ExitCode: a.ExitCode, Message: msg, Actor: "system",
	})
}

// decide moves a job whose attempt ended as settle decided, and audits it: what
// becomes of the job is Gantry's decision, made on the word of the node that reported
// the exit (the actor of ctx) or of the system (a lost node, a stop).
func (s *Service) decide(ctx context.Context, tx *store.Store, job *models.Job, t store.Transition) error {
	if err := tx.TransitionJob(ctx, job.ID, t); err != nil {
		return err
	}
	action := "job." + t.To
	if t.To == models.JobQueued {
		action = "job.requeued"
	}
	return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "job", ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID,
		Detail: map[string]any{"attempt": job.Attempt, "reason": t.Reason, "message": t.Message}})
}

// endedBecause says in words how an allocation ended.
func endedBecause(a *models.Allocation) string {
	switch {
	case a.StopReason == endNodeLost:
		return "lost its node"
	case a.StopReason == endNodeRejoined:
		return "lost its node, which joined again with a new agent"
	case a.ExitCode == nil:
		return "ended before it started"
	case *a.ExitCode == -1:
		return "was killed"
	}
	return fmt.Sprintf("exited with code %d", *a.ExitCode)
}

func withDetail(msg, detail string) string {
	if detail == "" {
		return msg
	}
	return msg + " (" + detail + ")"
}

// stopReplicas asks the live replicas of a failed gang attempt to stop; one not
// started yet simply ends.
func (s *Service) stopReplicas(ctx context.Context, tx *store.Store, live []models.Allocation) ([]int64, error) {
	reason := agentapi.StopReplica
	var nodes []int64
	for _, a := range live {
		if a.State == models.AllocStopping {
			continue
		}
		ch := store.AllocationChange{State: models.AllocStopping, StopReason: &reason}
		if a.State == models.AllocPending {
			now := s.now().UTC()
			ch = store.AllocationChange{State: models.AllocEnded, StopReason: &reason, EndedAt: &now}
		}
		if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, ch); err != nil {
			return nil, err
		}
		nodes = append(nodes, a.NodeID)
	}
	return nodes, nil
}

// endAllocations ends every active allocation of node with reason (the node is
// lost or replaced) and settles their jobs. It returns the nodes whose leases changed.
func (s *Service) endAllocations(ctx context.Context, tx *store.Store, node *models.Node, reason, detail string) ([]int64, error) {
	allocs, err := tx.ActiveAllocations(ctx, node.ID)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	touched := []int64{node.ID}
	for _, a := range allocs {
		why := reason
		if a.State == models.AllocStopping && checkpoints(a.StopReason) {
			// Asked to checkpoint and stop before the node went (a spot node's
			// machine is taken at its deadline): the job resumes, it did not fail.
			why = a.StopReason
		}
		err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, store.AllocationChange{State: models.AllocEnded, StopReason: &why, EndedAt: &now})
		if err != nil {
			return nil, err
		}
	}
	for _, a := range allocs {
		nodes, err := s.settle(ctx, tx, a.JobID, a.Attempt, detail)
		if err != nil {
			return nil, err
		}
		touched = append(touched, nodes...)
	}
	return touched, nil
}

// retriesUsed says that a job failed with every retry it had used: n > 0.
func retriesUsed(n int) string {
	if n == 1 {
		return "its one retry used"
	}
	return fmt.Sprintf("all %d retries used", n)
}
