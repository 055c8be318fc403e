package slurm

import (
	"encoding/json"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// GPUsPerNode reads the GPUs a job asks for on each of its nodes from squeue's TRES
// per node: gres:gpu:a100:2 (Slurm 22.05), or TRES-style gres/gpu:a100=2.
func GPUsPerNode(tres string) ([]GRES, error) {
	var gres []string
	for _, item := range strings.Split(tres, ",") {
		item = strings.TrimSpace(item)
		if rest, ok := strings.CutPrefix(item, "gres:"); ok {
			gres = append(gres, rest)
		} else if rest, ok := strings.CutPrefix(item, "gres/"); ok {
			gres = append(gres, strings.Replace(rest, "=", ":", 1))
		}
	}
	return parseGPUGres("tres_per_node", strings.Join(gres, ","))
}

// ForeignJob is a job of the partition that Gantry did not submit, as Gantry shows it
// (read-only) and counts it in utilisation: on the Gantry nodes of pool, with its GPUs
// per node named through the pool's gres_types. What cannot be read of it (a host
// list or TRES Gantry does not understand) is an error; the job is then left out.
func ForeignJob(pool string, cfg Config, j Job) (models.SlurmForeignJob, error) {
	f := models.SlurmForeignJob{
		SlurmJobID: j.ID, Name: printable(j.Name), User: j.User, Account: j.Account, QOS: j.QOS, State: j.State, Reason: j.Reason,
		CPUs: j.CPUs, MemoryMiB: j.MemoryMiB, SubmittedAt: j.Submit.UTC(), TimeLimitSec: int64(j.TimeLimit.Seconds()),
	}
	if phase, _ := phaseOf(j.State); phase == phaseRunning && !j.Start.IsZero() {
		start := j.Start.UTC()
		f.StartedAt = &start
	}
	hosts, err := ExpandHostlist(j.NodeList)
	if err != nil {
		return f, err
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = NodeName(pool, h)
	}
	raw, _ := json.Marshal(names)
	f.Nodes = string(raw)
	gpus, err := GPUsPerNode(j.TRES)
	if err != nil {
		return f, err
	}
	for _, g := range gpus {
		f.GPUs += g.Count
		if g.Type != "" {
			f.GPUModel = cfg.ModelOf(g.Type)
		}
	}
	return f, nil
}
