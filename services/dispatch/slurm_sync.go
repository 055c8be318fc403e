package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	was, err := p.clusterOf(ctx, sp, inv.Cluster)
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
		if changes, err = tx.SyncPoolNodes(ctx, sp.pool.ID, nodes, gone); err != nil {
			return err
		}
		if err := tx.UnmarkSlurmClusterMove(ctx, sp.pool.ID); err != nil {
			return err
		}
		var entries []audit.Entry
		if was != "" && was != inv.Cluster {
			entries = append(entries, audit.Entry{Action: "pool.slurm_cluster_changed", ObjectType: "pool", ObjectID: sp.pool.Name,
				Detail: map[string]any{"from": was, "to": inv.Cluster, "slurm_conf": cfg.SlurmConf}})
		}
		for _, c := range changes {
			entries = append(entries, audit.Entry{Action: "node.slurm_synced", ObjectType: "node", ObjectID: c.Name,
				Detail: map[string]any{"pool": sp.pool.Name, "from": c.From, "to": c.To, "reason": c.Reason, "gpus_before": c.GPUsBefore, "gpus_after": c.GPUsAfter}})
		}
		if len(entries) == 0 {
			return nil
		}
		return p.svc.audit.In(tx).AppendAll(audit.WithActor(ctx, audit.System()), entries)
	})
	if err != nil {
		return fmt.Errorf("sync nodes of Slurm pool %s: %w", sp.pool.Name, err)
	}
	sp.inventoryAt, sp.down = now, ""
	if was != "" && was != inv.Cluster {
		p.svc.log.Warn("Slurm pool reaches another cluster now; its nodes are that cluster's", "pool", sp.pool.Name, "from", was, "to", inv.Cluster)
	}
	if len(changes) > 0 {
		p.svc.Kick()
	}
	return nil
}

// clusterOf returns the cluster the pool's nodes were last synced from ("" when
// none says), and refuses a pool whose slurm.conf now reaches another cluster than
// the one where jobs of the pool still are: their Slurm job ids mean nothing there,
// or another job, so nothing is done with them until the pool reaches theirs again.
// A pool with none there takes the new cluster's nodes.
func (p *SlurmPools) clusterOf(ctx context.Context, sp *slurmPool, cluster string) (string, error) {
	nodes, err := p.svc.store.NodesOfPool(ctx, sp.pool.ID)
	if err != nil {
		return "", err
	}
	was := ""
	for _, n := range nodes {
		if was = models.SlurmClusterOf(n); was != "" {
			break
		}
	}
	if was == "" || was == cluster {
		return was, nil
	}
	rows, err := p.svc.store.OpenSlurmJobs(ctx, sp.pool.ID)
	if err != nil {
		return "", err
	}
	open := 0
	for _, r := range rows {
		if !r.Done {
			open++
		}
	}
	if open > 0 {
		return "", &clusterMovedError{conf: sp.b.Config().SlurmConf, from: was, to: cluster, jobs: open}
	}
	return was, nil
}

// markMoved marks the pool as standing still on another cluster (what ForgetSlurmJobs
// and the pool's page go by), last seen following its jobs at this leader's last poll.
func (p *SlurmPools) markMoved(ctx context.Context, sp *slurmPool, now time.Time, moved *clusterMovedError, reason string) error {
	seen := sp.polledAt
	if seen.IsZero() {
		seen = now // this leader never polled the jobs' cluster: the mark's own time is all it knows
	}
	return p.svc.store.MarkSlurmClusterMove(ctx, &models.SlurmClusterMove{PoolID: sp.pool.ID, JobsCluster: moved.from, ConfCluster: moved.to,
		Reason: reason, FoundAt: now, LastSeenAt: seen})
}

// clusterMovedError is a pool whose slurm.conf leads to another cluster than its jobs'.
type clusterMovedError struct {
	conf, from, to string
	jobs           int
}

func (e *clusterMovedError) Error() string {
	conf := e.conf
	if conf == "" {
		conf = "Slurm's default slurm.conf"
	}
	return fmt.Sprintf("%s now reaches Slurm cluster %s, not %s, where %d of the pool's jobs are; Gantry leaves them alone until the pool reaches %s again",
		conf, e.to, e.from, e.jobs, e.from)
}

// confStamp tells an edit of the pool's slurm.conf (which may point it at another
// cluster): its time and size, "" when it cannot be read or is Slurm's default.
func confStamp(path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d %d", fi.ModTime().UnixNano(), fi.Size())
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
