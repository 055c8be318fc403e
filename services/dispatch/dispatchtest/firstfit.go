// Package dispatchtest helps test dispatch without services/scheduler: a first-fit
// scheduler, for tests only.
package dispatchtest

import (
	"fmt"

	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// FirstFit is the tests' stand-in for services/scheduler: each queued job, oldest
// first, goes on the first nodes with room, whole GPUs or a share of one.
type FirstFit struct{}

// Plan places the queue in order.
func (FirstFit) Plan(s dispatch.Snapshot) dispatch.Plan {
	nodes := make([]dispatch.NodeCapacity, len(s.Nodes))
	for i, n := range s.Nodes {
		nodes[i] = n
		nodes[i].GPUs = append([]dispatch.GPUCapacity(nil), n.GPUs...)
	}
	plan := dispatch.Plan{Waiting: map[int64]string{}}
	for _, j := range s.Queue {
		trial := make([]dispatch.NodeCapacity, len(nodes))
		for i, n := range nodes {
			trial[i] = n
			trial[i].GPUs = append([]dispatch.GPUCapacity(nil), n.GPUs...)
		}
		p := dispatch.Placement{JobID: j.ID}
		for range max(j.Replicas, 1) {
			placed := false
			for i := range trial {
				n := &trial[i]
				if n.FreeCPUMilli < j.CPUMilli || n.FreeMemoryMiB < j.MemoryMiB || n.FreeScratchMiB < j.ScratchMiB {
					continue
				}
				gpus := pickGPUs(n, j.GPUs, j.GPUMilli)
				if gpus == nil {
					continue
				}
				n.FreeCPUMilli -= j.CPUMilli
				n.FreeMemoryMiB -= j.MemoryMiB
				n.FreeScratchMiB -= j.ScratchMiB
				p.Replicas = append(p.Replicas, dispatch.ReplicaPlacement{NodeID: n.ID, GPUs: gpus})
				placed = true
				break
			}
			if !placed {
				break
			}
		}
		if len(p.Replicas) < max(j.Replicas, 1) {
			plan.Waiting[j.ID] = fmt.Sprintf("no node has %d free GPUs", j.GPUs)
			continue
		}
		nodes = trial
		plan.Placements = append(plan.Placements, p)
	}
	return plan
}

// pickGPUs debits and returns count whole GPUs, or one share of milli; nil when
// the node lacks them. A job without GPUs gets an empty, non-nil list.
func pickGPUs(n *dispatch.NodeCapacity, count, milli int) []agentapi.Device {
	out := []agentapi.Device{}
	if milli > 0 {
		for i := range n.GPUs {
			if g := &n.GPUs[i]; g.Healthy && g.FreeMilli >= int64(milli) {
				g.FreeMilli -= int64(milli)
				return append(out, agentapi.Device{UUID: g.UUID, Milli: int64(milli)})
			}
		}
		return nil
	}
	var picked []*dispatch.GPUCapacity
	for i := range n.GPUs {
		if g := &n.GPUs[i]; g.Healthy && g.FreeMilli == 1000 && len(picked) < count {
			picked = append(picked, g)
		}
	}
	if len(picked) < count {
		return nil
	}
	for _, g := range picked {
		g.FreeMilli = 0
		out = append(out, agentapi.Device{UUID: g.UUID, Milli: 1000})
	}
	return out
}
