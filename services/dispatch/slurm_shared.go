package dispatch

import (
	"github.com/gantry-gpu/gantry/models"
)

// shareSlurmNodes makes the Gantry nodes of one Slurm node (a node in the partitions
// of several Slurm pools) offer its capacity once. What Gantry's allocations hold on
// one of them is taken out of the others' capacity, as a job outside Gantry's is (the
// scheduler counts each node's own allocations against its capacity): its GPUs, by
// index, its CPUs and memory. addForeign then takes what jobs outside Gantry hold from
// all of them, and the ledger debits a placement on one from all (snap.Shared).
// nodes are the models of snap.Nodes, in order.
func shareSlurmNodes(snap *Snapshot, nodes []models.Node) {
	snap.Shared = models.SharedSlurmNodes(nodes)
	if len(snap.Shared) == 0 {
		return
	}
	type use struct {
		cpu, mem int64
		gpus     map[int]bool // held, by index
	}
	own := make([]use, len(nodes))
	total := map[int64]*use{}
	for i, n := range nodes {
		first, ok := snap.Shared[n.ID]
		if !ok {
			continue
		}
		nc := &snap.Nodes[i]
		own[i] = use{cpu: nc.CPUMilli - nc.FreeCPUMilli, mem: nc.MemoryMiB - nc.FreeMemoryMiB, gpus: map[int]bool{}}
		t := total[first]
		if t == nil {
			t = &use{gpus: map[int]bool{}}
			total[first] = t
		}
		t.cpu += own[i].cpu
		t.mem += own[i].mem
		for _, g := range nc.GPUs {
			if g.FreeMilli < 1000 { // Slurm nodes have no MIG slices
				own[i].gpus[g.Index], t.gpus[g.Index] = true, true
			}
		}
	}
	for i, n := range nodes {
		first, ok := snap.Shared[n.ID]
		if !ok {
			continue
		}
		t, nc := total[first], &snap.Nodes[i]
		cpu, mem := t.cpu-own[i].cpu, t.mem-own[i].mem
		nc.CPUMilli, nc.FreeCPUMilli = max(nc.CPUMilli-cpu, 0), max(nc.FreeCPUMilli-cpu, 0)
		nc.MemoryMiB, nc.FreeMemoryMiB = max(nc.MemoryMiB-mem, 0), max(nc.FreeMemoryMiB-mem, 0)
		gpus := nc.GPUs[:0]
		for _, g := range nc.GPUs {
			if t.gpus[g.Index] && !own[i].gpus[g.Index] {
				continue // held through another of its pools
			}
			gpus = append(gpus, g)
		}
		nc.GPUs = gpus
	}
}

// copiesOf are the indexes in snap.Nodes of the node at index i and of the other
// Gantry nodes of its Slurm node.
func copiesOf(snap *Snapshot, i int) []int {
	first, ok := snap.Shared[snap.Nodes[i].ID]
	if !ok {
		return []int{i}
	}
	var out []int
	for j, n := range snap.Nodes {
		if f, ok := snap.Shared[n.ID]; ok && f == first {
			out = append(out, j)
		}
	}
	return out
}
