package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// reclaimPrefix starts the state reason of a node being reclaimed.
const reclaimPrefix = "reclaimed by its provider: "

// Reclaimed reports whether a provider's notice is taking the node away, and why.
func Reclaimed(n models.Node) (string, bool) {
	if n.State != models.NodeDraining {
		return "", false
	}
	return strings.CutPrefix(n.StateReason, reclaimPrefix)
}

// Reclaim handles a provider's notice that it takes node name away at deadline (a
// spot interruption): the node drains at once, and every attempt on it gets the
// checkpoint-then-stop protocol with a grace that ends before the deadline, to be
// requeued and resume on other capacity. A second notice for the same node changes
// nothing. The actor of ctx is audited.
func (s *Service) Reclaim(ctx context.Context, name string, deadline time.Time, reason string) error {
	var touched []int64
	acted := false
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		node, err := tx.NodeByName(ctx, name)
		if err != nil {
			return err
		}
		watched := []string{models.NodeReady, models.NodeCordoned, models.NodeDraining}
		if !slices.Contains(watched, node.State) || strings.HasPrefix(node.StateReason, reclaimPrefix) {
			return nil
		}
		why := reclaimPrefix + reason
		if err := tx.SetNodeState(ctx, node.ID, watched, models.NodeDraining, why); errors.Is(err, store.ErrStale) {
			return nil
		} else if err != nil {
			return err
		}
		d := deadline.UTC()
		node.State, node.StateReason, node.DrainDeadline = models.NodeDraining, why, &d
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		allocs, err := tx.ActiveAllocations(ctx, node.ID)
		if err != nil {
			return err
		}
		stopped := map[int64]bool{}
		for _, a := range allocs {
			if stopped[a.JobID] || a.State == models.AllocStopping {
				continue
			}
			job, err := tx.JobByID(ctx, a.JobID)
			if err != nil {
				return err
			}
			if job.Attempt != a.Attempt {
				continue
			}
			stopped[a.JobID] = true
			more, err := s.stopAttempt(ctx, tx, job, agentapi.StopReclaim, "system",
				fmt.Sprintf("node %s is reclaimed by its provider at %s: %s", node.Name, d.Format(time.RFC3339), reason))
			if err != nil && !errors.Is(err, store.ErrStale) {
				return err
			}
			touched = append(touched, more...)
		}
		acted = true
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.reclaimed", ObjectType: "node", ObjectID: node.Name,
			Detail: map[string]any{"reason": reason, "deadline": d, "jobs": len(stopped)}})
	})
	if err != nil {
		return fmt.Errorf("reclaim node %s: %w", name, err)
	}
	if acted {
		s.log.Warn("node reclaimed by its provider", "node", name, "deadline", deadline, "reason", reason)
		s.nodes.notify(touched...)
		s.Kick()
	}
	return nil
}

// reclaimWindow returns, for a node being reclaimed, how to cap a stopping attempt's
// checkpoint grace so that it and the kill grace end before the machine goes; nil
// when no allocation of the node is stopped for reclaim.
func (s *Service) reclaimWindow(ctx context.Context, nodeID int64, allocs []models.Allocation) (func(models.Allocation, time.Duration) time.Duration, error) {
	if !slices.ContainsFunc(allocs, func(a models.Allocation) bool { return a.StopReason == agentapi.StopReclaim }) {
		return nil, nil
	}
	node, err := s.store.NodeByID(ctx, nodeID)
	if err != nil || node.DrainDeadline == nil {
		return nil, err
	}
	deadline := *node.DrainDeadline
	return func(a models.Allocation, grace time.Duration) time.Duration {
		// Counted from when the stop was asked (the allocation's last change), so
		// that the lease, and its version, stay the same from poll to poll.
		left := deadline.Sub(a.UpdatedAt) - s.cfg.KillGrace
		return max(0, min(grace, left.Truncate(time.Second)))
	}, nil
}
