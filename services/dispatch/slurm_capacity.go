package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
)

// addForeign takes out of the snapshot what jobs submitted to a Slurm pool outside
// Gantry hold on its nodes (their GPUs, CPUs and memory), so that the scheduler
// places on a Slurm pool only what Slurm can start, and in Gantry's order. It takes
// GPUs no Gantry allocation holds, of the model the job holds, from each Gantry node
// of the Slurm node it runs on.
func (s *Service) addForeign(ctx context.Context, snap *Snapshot) error {
	jobs, err := s.store.SlurmForeignJobs(ctx, 0)
	if err != nil {
		return err
	}
	at := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		at[n.Name] = i
	}
	for _, j := range jobs {
		if j.State != "RUNNING" {
			continue
		}
		var nodes []string
		if err := json.Unmarshal([]byte(j.Nodes), &nodes); err != nil {
			return fmt.Errorf("nodes of Slurm job %s: %w", j.SlurmJobID, err)
		}
		if len(nodes) == 0 {
			continue
		}
		cpu := int64(j.CPUs) * 1000 / int64(len(nodes))
		for _, name := range nodes {
			i, ok := at[name]
			if !ok {
				continue
			}
			// Every Gantry node of its Slurm node loses it: their GPUs are in the same
			// state (shareSlurmNodes), so each drops the same ones.
			for _, c := range copiesOf(snap, i) {
				n := &snap.Nodes[c]
				n.GPUs = withoutFree(n.GPUs, j.GPUs, j.GPUModel)
				n.CPUMilli, n.FreeCPUMilli = max(n.CPUMilli-cpu, 0), max(n.FreeCPUMilli-cpu, 0)
				n.MemoryMiB, n.FreeMemoryMiB = max(n.MemoryMiB-j.MemoryMiB, 0), max(n.FreeMemoryMiB-j.MemoryMiB, 0)
			}
		}
	}
	return nil
}

// withoutFree drops up to count whole free GPUs of model ("" for any) from gpus.
func withoutFree(gpus []GPUCapacity, count int, model string) []GPUCapacity {
	out := gpus[:0:0]
	for _, g := range gpus {
		if count > 0 && g.FreeMilli == 1000 && len(g.MIG) == 0 && (model == "" || g.Model == model) {
			count--
			continue
		}
		out = append(out, g)
	}
	return out
}
