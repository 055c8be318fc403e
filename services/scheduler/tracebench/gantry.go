package tracebench

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gantry-gpu/gantry/services/scheduler"
)

// traceCardMemoryMiB is the card memory of the trace's public models; G1–G3 are
// undisclosed and stay 0. No trace pod asks for GPU memory, so these only fill in the
// devices the scheduler reports.
func traceCardMemoryMiB(model string) int64 {
	switch model {
	case "P100", "V100M16":
		return 16384
	case "T4":
		return 15360
	case "V100M32":
		return 32768
	case "A10":
		return 23028
	}
	return 0
}

// startGantry replays the trace through the production scheduler in its default
// configuration: Scheduler.Place decides, Cluster.Assume commits, exactly as the
// dispatcher does for each job. Nodes are listed in the run's tie-break priority, the
// order every policy breaks ties by, and the workload is the trace's own, which FGD
// also gets.
func startGantry(w *Workload, c *simCluster) (decider, error) {
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		return nil, err
	}
	order := make([]int, len(c.nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return c.priority[a] - c.priority[b] })
	snap := scheduler.Snapshot{Nodes: make([]scheduler.Node, 0, len(order))}
	index := make(map[string]int, len(order))
	for _, i := range order {
		tn := w.Nodes[i]
		index[tn.Name] = i
		n := scheduler.Node{ID: tn.Name, CPUMilli: tn.CPUMilli, RAMMiB: tn.MemoryMiB}
		for g := 0; g < tn.GPUs; g++ {
			n.GPUs = append(n.GPUs, scheduler.GPU{Index: g, UUID: tn.Name + "-gpu" + strconv.Itoa(g), Model: tn.Model, MemoryMiB: traceCardMemoryMiB(tn.Model)})
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	reqs := make([]scheduler.Request, len(w.Trace))
	for i := range w.Trace {
		reqs[i] = PodRequest(&w.Trace[i])
	}
	snap.Workload = scheduler.WorkloadFromRequests(reqs)
	cluster, err := scheduler.NewCluster(snap, sched.Config())
	if err != nil {
		return nil, fmt.Errorf("gantry cluster: %w", err)
	}
	seq := 0
	return func(p *TracePod) (int, []int, bool) {
		seq++
		job := scheduler.Job{ID: p.Name + "#" + strconv.Itoa(seq), Request: PodRequest(p)}
		pl, ok, _ := sched.Place(cluster, job)
		if !ok {
			return 0, nil, false
		}
		if err := cluster.Assume(job, pl); err != nil {
			return 0, nil, false
		}
		rp := pl.Replicas[0]
		var gpus []int
		for _, d := range rp.Devices {
			gpus = append(gpus, d.GPUIndex)
		}
		return index[rp.NodeID], gpus, true
	}, nil
}

// PodRequest is the job a trace pod submits.
func PodRequest(p *TracePod) scheduler.Request {
	r := scheduler.Request{CPUMilli: p.CPUMilli, RAMMiB: p.MemoryMiB, GPUModels: p.Spec}
	if p.Milli > 0 {
		r.GPUs = p.Num
		if p.Milli < 1000 {
			r.GPUMilli = p.Milli
		}
	}
	return r
}
