package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// syncNodes reads the pool's partition and makes its nodes with GPU GRES the pool's
// Gantry nodes (read-only: runtime slurm, state and health from Slurm). Nodes that
// left the partition go down. New and gone nodes and state changes are audited.
func (p *SlurmPools) syncNodes(ctx context.Context, sp *slurmPool, now time.Time) error {
	inv, err := sp.b.Inventory(ctx)
	if err != nil {
		return err
	}
	cfg := sp.b.Config()
	nodes := make([]store.PoolNode, 0, len(inv.Nodes))
	for _, n := range inv.Nodes {
		node, devs := slurm.GantryNode(sp.pool.Name, cfg, n)
		if inv.Partition.State != "UP" && node.State == models.NodeReady {
			node.State, node.StateReason = models.NodeCordoned, fmt.Sprintf("Slurm: partition %s is %s", cfg.Partition, inv.Partition.State)
		}
		nodes = append(nodes, store.PoolNode{Node: node, Devices: devs})
	}
	gone := fmt.Sprintf("no longer in Slurm partition %s", cfg.Partition)
	var changes []store.NodeChange
	err = p.svc.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if changes, err = tx.SyncPoolNodes(ctx, sp.pool.ID, nodes, gone); err != nil || len(changes) == 0 {
			return err
		}
		entries := make([]audit.Entry, len(changes))
		for i, c := range changes {
			entries[i] = audit.Entry{Action: "node.slurm_synced", ObjectType: "node", ObjectID: c.Name,
				Detail: map[string]any{"pool": sp.pool.Name, "from": c.From, "to": c.To, "reason": c.Reason, "gpus_before": c.GPUsBefore, "gpus_after": c.GPUsAfter}}
		}
		return p.svc.audit.In(tx).AppendAll(audit.WithActor(ctx, audit.System()), entries)
	})
	if err != nil {
		return fmt.Errorf("sync nodes of Slurm pool %s: %w", sp.pool.Name, err)
	}
	sp.inventoryAt, sp.down = now, ""
	if len(changes) > 0 {
		p.svc.Kick()
	}
	return nil
}

func decodeSeen(raw string) (slurm.Seen, error) {
	var s slurm.Seen
	if raw == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, fmt.Errorf("read what was seen of it: %w", err)
	}
	return s, nil
}

func encodeSeen(s slurm.Seen) string {
	b, _ := json.Marshal(s)
	return string(b)
}
