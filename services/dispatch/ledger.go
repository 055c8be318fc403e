package dispatch

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/models"
)

// ledger is the free capacity of a snapshot, debited as placements are applied,
// so that a faulty plan can never put two jobs on the same share of a node. The
// Gantry nodes of one Slurm node share one account (the first's, GPU by index): the
// scheduler sees them apart, and may place on each what only one can run.
type ledger struct {
	nodes  map[int64]*NodeCapacity
	gpus   map[int64]map[string]*GPUCapacity
	shared map[int64]int64
}

func newLedger(snap Snapshot) *ledger {
	l := &ledger{nodes: map[int64]*NodeCapacity{}, gpus: map[int64]map[string]*GPUCapacity{}}
	for i := range snap.Nodes {
		n := snap.Nodes[i]
		n.GPUs = append([]GPUCapacity(nil), n.GPUs...)
		for j := range n.GPUs {
			n.GPUs[j].MIG = append([]MIGCapacity(nil), n.GPUs[j].MIG...)
		}
		l.nodes[n.ID] = &n
		l.gpus[n.ID] = map[string]*GPUCapacity{}
		for j := range n.GPUs {
			l.gpus[n.ID][n.GPUs[j].UUID] = &n.GPUs[j]
		}
	}
	l.shared = snap.Shared
	for _, n := range snap.Nodes {
		first, ok := snap.Shared[n.ID]
		if !ok || first == n.ID || l.nodes[first] == nil {
			continue
		}
		byIndex := map[int]*GPUCapacity{}
		for j := range l.nodes[first].GPUs {
			g := &l.nodes[first].GPUs[j]
			byIndex[g.Index] = g
		}
		l.nodes[n.ID] = l.nodes[first]
		for _, g := range n.GPUs {
			if fg, ok := byIndex[g.Index]; ok {
				l.gpus[n.ID][g.UUID] = fg
			} else {
				delete(l.gpus[n.ID], g.UUID)
			}
		}
	}
	return l
}

// errSharedTaken refuses a placement on a Slurm node in several pools that another
// placement of the plan, on the Gantry node of another of its pools, took first.
var errSharedTaken = errors.New("its Slurm node is in several pools, and a placement of this pass in another of them took what it needs")

// take debits p if it fits in full, and changes nothing otherwise.
func (l *ledger) take(job *models.Job, p Placement) error {
	replicas := max(job.Replicas, 1)
	if len(p.Replicas) != replicas {
		return fmt.Errorf("job %d wants %d replicas, the plan has %d", job.ID, replicas, len(p.Replicas))
	}
	cpu := map[int64]int64{}
	mem := map[int64]int64{}
	scratch := map[int64]int64{}
	milli := map[*GPUCapacity]int64{}
	migs := map[*MIGCapacity]bool{}
	for _, r := range p.Replicas {
		n, ok := l.nodes[r.NodeID]
		if !ok {
			return fmt.Errorf("node %d takes no new work", r.NodeID)
		}
		_, shared := l.shared[r.NodeID]
		cpu[n.ID] += job.CPUMilli
		mem[n.ID] += job.MemoryMiB
		scratch[n.ID] += job.ScratchMiB
		if cpu[n.ID] > n.FreeCPUMilli || mem[n.ID] > n.FreeMemoryMiB || scratch[n.ID] > n.FreeScratchMiB {
			if shared {
				return fmt.Errorf("node %d: %w", r.NodeID, errSharedTaken)
			}
			return fmt.Errorf("node %s lacks CPU, memory or scratch", n.Name)
		}
		for _, d := range r.GPUs {
			g, ok := l.gpus[r.NodeID][d.UUID]
			if !ok || !g.Healthy {
				return fmt.Errorf("GPU %s is not a healthy GPU of node %s", d.UUID, n.Name)
			}
			if d.MIGUUID != "" {
				m := slices.IndexFunc(g.MIG, func(m MIGCapacity) bool { return m.UUID == d.MIGUUID })
				if m < 0 || !g.MIG[m].Free || migs[&g.MIG[m]] {
					return fmt.Errorf("MIG instance %s of GPU %s is unknown or taken", d.MIGUUID, d.UUID)
				}
				migs[&g.MIG[m]] = true
				continue
			}
			if d.Milli <= 0 || d.Milli > 1000 {
				return fmt.Errorf("GPU %s: share %d is not 1-1000 milli-GPUs", d.UUID, d.Milli)
			}
			milli[g] += d.Milli
			if milli[g] > g.FreeMilli && shared {
				return fmt.Errorf("node %d: %w", r.NodeID, errSharedTaken)
			}
			if milli[g] > g.FreeMilli {
				return fmt.Errorf("GPU %s of node %s has %d milli-GPUs free", d.UUID, n.Name, g.FreeMilli)
			}
		}
	}
	for id, c := range cpu {
		n := l.nodes[id]
		n.FreeCPUMilli -= c
		n.FreeMemoryMiB -= mem[id]
		n.FreeScratchMiB -= scratch[id]
	}
	for g, m := range milli {
		g.FreeMilli -= m
	}
	for m := range migs {
		m.Free = false
	}
	return nil
}
