package handlers

// The cluster page's view of Slurm pools: one Slurm node in several pools, and the jobs
// that Slurm runs outside Gantry.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// shareGPUs makes the Gantry nodes that are up and are one Slurm node (in the
// partitions of several pools) show one set of GPUs: the first's, holding what
// Gantry's jobs hold on any of them, GPU by index; what jobs outside Gantry hold is
// then marked on all at once. It returns the groups (models.SharedSlurmNodes).
func shareGPUs(nodes []models.Node, up map[int64]bool, gpus map[int64][]templates.ClusterGPU) map[int64]int64 {
	var live []models.Node
	for _, n := range nodes {
		if up[n.ID] {
			live = append(live, n)
		}
	}
	shared := models.SharedSlurmNodes(live)
	for _, n := range live {
		first, ok := shared[n.ID]
		if !ok || first == n.ID {
			continue
		}
		into := gpus[first]
		for _, g := range gpus[n.ID] {
			for i := range into {
				if into[i].Index == g.Index {
					into[i].InUseMilli = min(into[i].InUseMilli+g.InUseMilli, 1000)
					into[i].Jobs = append(into[i].Jobs, g.Jobs...)
				}
			}
		}
	}
	for _, n := range live {
		if first, ok := shared[n.ID]; ok {
			gpus[n.ID] = gpus[first]
		}
	}
	return shared
}

// sameSlurmNode names the other Gantry nodes of the node's Slurm node, if any.
func sameSlurmNode(id int64, nodes []models.Node, shared map[int64]int64) []string {
	first, ok := shared[id]
	if !ok {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if f, ok := shared[n.ID]; ok && f == first && n.ID != id {
			out = append(out, n.Name)
		}
	}
	return out
}

// markForeign shows, on the Slurm nodes' GPUs, those that jobs submitted to Slurm
// outside Gantry hold (free GPUs of the model each holds, node by node), so they count
// as in use, and lists those jobs.
func markForeign(jobs []models.SlurmForeignJob, nodes []models.Node, pools []models.NodePool, gpus map[int64][]templates.ClusterGPU) []templates.ClusterForeign {
	nodeID := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		nodeID[n.Name] = n.ID
	}
	poolName := make(map[int64]string, len(pools))
	for _, p := range pools {
		poolName[p.ID] = p.Name
	}
	out := make([]templates.ClusterForeign, 0, len(jobs))
	for _, j := range jobs {
		var names []string
		_ = json.Unmarshal([]byte(j.Nodes), &names)
		f := templates.ClusterForeign{Pool: poolName[j.PoolID], ID: j.SlurmJobID, Name: j.Name, User: j.User, State: j.State, Reason: j.Reason,
			GPUs: "none", Nodes: strings.Join(names, ", ")}
		if j.GPUs > 0 {
			f.GPUs = strconv.Itoa(j.GPUs) + "× " + orAny(j.GPUModel) + " per node"
		}
		out = append(out, f)
		if j.State != "RUNNING" {
			continue
		}
		for _, name := range names {
			gs, want := gpus[nodeID[name]], j.GPUs
			for i := range gs {
				if want > 0 && gs[i].InUseMilli == 0 && len(gs[i].Slices) == 0 && (j.GPUModel == "" || gs[i].Model == j.GPUModel) {
					gs[i].InUseMilli, gs[i].Foreign = 1000, append(gs[i].Foreign, j.SlurmJobID)
					want--
				}
			}
		}
	}
	return out
}
