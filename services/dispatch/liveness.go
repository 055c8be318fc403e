package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// markLostNodes marks every node silent past the timeout lost, ends its
// allocations and settles their jobs. After a server start it waits one timeout
// before judging anyone: agents could not heartbeat while the server was down.
func (s *Service) markLostNodes(ctx context.Context) (int, error) {
	now := s.now().UTC()
	if now.Sub(s.started) < s.cfg.NodeTimeout {
		return 0, nil
	}
	cutoff := now.Add(-s.cfg.NodeTimeout)
	watched := []string{models.NodeReady, models.NodeDraining, models.NodeCordoned}
	silent, err := s.store.NodesSilentSince(ctx, cutoff, watched)
	if err != nil {
		return 0, err
	}
	lost := 0
	for i := range silent {
		n := &silent[i]
		last := n.CreatedAt
		if n.LastHeartbeatAt != nil {
			last = *n.LastHeartbeatAt
		}
		why := fmt.Sprintf("node %s sent no heartbeat for %s", n.Name, now.Sub(last).Round(time.Second))
		var touched []int64
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			if err := tx.MarkNodeLost(ctx, n.ID, watched, cutoff, why); err != nil {
				return err
			}
			var err error
			if touched, err = s.endAllocations(ctx, tx, n, endNodeLost, why); err != nil {
				return err
			}
			return s.audit.In(tx).Append(audit.WithActor(ctx, audit.System()), audit.Entry{
				Action: "node.lost", ObjectType: "node", ObjectID: n.Name, Detail: map[string]any{"reason": why},
			})
		})
		if errors.Is(err, store.ErrStale) {
			continue
		}
		if err != nil {
			return lost, fmt.Errorf("mark node %s lost: %w", n.Name, err)
		}
		lost++
		s.nodes.notify(touched...)
		s.signalEnded()
		s.log.Warn("node lost", "node", n.Name, "reason", why)
	}
	return lost, nil
}
