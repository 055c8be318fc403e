package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// MaxLeaseWait bounds how long a lease poll may wait.
const MaxLeaseWait = time.Minute

// Leases returns every allocation wanted on node. When seen equals the current
// version it waits, up to wait, for a change first: the agent's long poll.
func (s *Service) Leases(ctx context.Context, node *models.Node, seen string, wait time.Duration) (agentapi.Leases, error) {
	wait = min(max(wait, 0), MaxLeaseWait)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := s.nodes.watch(node.ID)
		l, issued, err := s.leasesOf(ctx, node.ID)
		if err != nil {
			return l, err
		}
		if l.Version != seen || wait == 0 {
			return s.withJobTokens(ctx, l, issued)
		}
		recheck := time.NewTimer(s.cfg.LeaseRecheck)
		select {
		case <-changed:
		case <-recheck.C:
		case <-deadline.C:
			recheck.Stop()
			return s.withJobTokens(ctx, l, issued)
		case <-ctx.Done():
			// Nobody will read this answer: mint no token into it.
			recheck.Stop()
			return l, nil
		}
		recheck.Stop()
	}
}

// leasesOf builds the leases of a node from its active allocations, and returns
// the allocations they were built from, in the same order.
func (s *Service) leasesOf(ctx context.Context, nodeID int64) (agentapi.Leases, []models.Allocation, error) {
	fail := func(err error) (agentapi.Leases, []models.Allocation, error) {
		return agentapi.Leases{}, nil, fmt.Errorf("leases of node %d: %w", nodeID, err)
	}
	allocs, err := s.store.ActiveAllocations(ctx, nodeID)
	if err != nil {
		return fail(err)
	}
	var issued []models.Allocation
	out := agentapi.Leases{Allocations: []agentapi.Lease{}}
	if len(allocs) > 0 {
		ids := make([]int64, 0, len(allocs))
		for _, a := range allocs {
			ids = append(ids, a.JobID)
		}
		jobs, err := s.store.JobsByIDs(ctx, ids)
		if err != nil {
			return fail(err)
		}
		secrets, err := s.store.SecretEnvOfJobs(ctx, ids)
		if err != nil {
			return fail(err)
		}
		grace, err := s.graceByClass(ctx)
		if err != nil {
			return fail(err)
		}
		byID := make(map[int64]*models.Job, len(jobs))
		for i := range jobs {
			byID[jobs[i].ID] = &jobs[i]
		}
		window, err := s.reclaimWindow(ctx, nodeID, allocs)
		if err != nil {
			return fail(err)
		}
		for _, a := range allocs {
			j, ok := byID[a.JobID]
			if !ok {
				continue
			}
			g := grace[j.PriorityClass]
			if a.StopReason == agentapi.StopReclaim && window != nil {
				g = window(a, g)
			}
			l, err := lease(a, j, g)
			if err != nil {
				return fail(err)
			}
			l.SecretEnv = secrets[j.ID]
			out.Allocations = append(out.Allocations, l)
			issued = append(issued, a)
		}
	}
	b, err := json.Marshal(out.Allocations)
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(b)
	out.Version = hex.EncodeToString(sum[:12])
	return out, issued, nil
}

func (s *Service) graceByClass(ctx context.Context) (map[string]time.Duration, error) {
	classes, err := s.store.PriorityClasses(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Duration, len(classes))
	for _, c := range classes {
		out[c.Name] = time.Duration(c.CheckpointGraceSec) * time.Second
	}
	return out, nil
}

// lease is what the agent needs of one allocation.
func lease(a models.Allocation, j *models.Job, grace time.Duration) (agentapi.Lease, error) {
	l := agentapi.Lease{
		AttemptRef: agentapi.AttemptRef{JobID: a.JobID, Attempt: a.Attempt, Replica: a.Replica},
		JobName:    j.Name,
		Image:      j.ImageRef,
		CPUMilli:   a.CPUMilli,
		MemoryMiB:  a.MemoryMiB,
		ScratchMiB: a.ScratchMiB,
		Started:    a.StartedAt != nil,
	}
	if err := json.Unmarshal([]byte(j.Command), &l.Command); err != nil {
		return l, fmt.Errorf("command of job %d: %w", j.ID, err)
	}
	if j.Env != "" {
		if err := json.Unmarshal([]byte(j.Env), &l.Env); err != nil {
			return l, fmt.Errorf("env of job %d: %w", j.ID, err)
		}
	}
	var err error
	if l.Devices, err = devicesOf(a); err != nil {
		return l, err
	}
	if a.State == models.AllocStopping {
		l.Stop = &agentapi.Stop{Reason: a.StopReason, Message: stopMessage(a.StopReason), CheckpointSaved: a.CheckpointSavedAt != nil}
		if checkpoints(a.StopReason) {
			l.Stop.GraceMS = grace.Milliseconds()
		}
	}
	return l, nil
}

// checkpoints reports whether a stop for reason gives the job time to save a
// checkpoint: it will resume. A cancelled job, or a replica whose gang failed, will not.
func checkpoints(reason string) bool {
	return reason == agentapi.StopPreempt || reason == agentapi.StopDrain || reason == agentapi.StopGovernance || reason == agentapi.StopReclaim ||
		reason == agentapi.StopRelease || reason == agentapi.StopHold
}

func stopMessage(reason string) string {
	switch reason {
	case agentapi.StopCancel:
		return "the job was cancelled"
	case agentapi.StopPreempt:
		return "the job is preempted by a higher-priority job; it will resume from its checkpoint"
	case agentapi.StopDrain:
		return "the node is draining; the job will resume elsewhere from its checkpoint"
	case agentapi.StopReplica:
		return "another replica of this attempt failed"
	case agentapi.StopGovernance:
		return "a governance rule stopped the job; it is held until released, then resumes from its checkpoint"
	case agentapi.StopRelease:
		return "a governance rule releases this idle job's GPUs; it goes back to the queue and resumes from its checkpoint"
	case agentapi.StopReclaim:
		return "the node's provider reclaims it (spot interruption); the job will resume elsewhere from its checkpoint"
	case agentapi.StopHold:
		return "the job is held; it resumes from its checkpoint when released"
	}
	return reason
}
