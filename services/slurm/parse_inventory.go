package slurm

import (
	"errors"
	"strings"
)

// sinfoFormat asks sinfo (one line per node and partition, -N) for what
// parseSinfoNodes reads: node, partition, state, CPUs (allocated/idle/other/total),
// memory, allocated memory, GRES, GRES in use, reason.
const sinfoFormat = "NodeList:0" + sep + ",Partition:0" + sep + ",StateLong:0" + sep + ",CPUsState:0" + sep +
	",Memory:0" + sep + ",AllocMem:0" + sep + ",Gres:0" + sep + ",GresUsed:0" + sep + ",Reason:0"

const sinfoFields = 9

// parseSinfoNodes reads sinfo -N output in sinfoFormat into one Node per node, with
// the partitions it belongs to. Inventory is all or nothing: any bad line fails it.
func parseSinfoNodes(out []byte) ([]Node, error) {
	var nodes []Node
	at := map[string]int{}
	nums, text := lines(out)
	for i, line := range text {
		n, err := parseSinfoLine(line)
		if err != nil {
			return nil, lineError("sinfo", nums[i], line, "", err)
		}
		if k, ok := at[n.Name]; ok {
			nodes[k].Partitions = append(nodes[k].Partitions, n.Partitions...)
			continue
		}
		at[n.Name] = len(nodes)
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseSinfoLine(line string) (Node, error) {
	f, err := fields(line, sinfoFields)
	if err != nil {
		return Node{}, err
	}
	n := Node{Name: strings.TrimSpace(f[0]), State: strings.TrimSpace(f[2]), Reason: clean(f[8])}
	if n.Name == "" {
		return n, &fieldError{"node", f[0], errors.New("empty")}
	}
	if n.State == "" {
		return n, &fieldError{"state", f[2], errors.New("empty")}
	}
	if p := strings.TrimSuffix(strings.TrimSpace(f[1]), "*"); p != "" {
		n.Partitions = []string{p}
	}
	cpus := strings.Split(strings.TrimSpace(f[3]), "/")
	if len(cpus) != 4 {
		return n, &fieldError{"cpus_state", f[3], errors.New("want allocated/idle/other/total")}
	}
	if n.AllocCPUs, err = parseInt("cpus_state", cpus[0]); err != nil {
		return n, err
	}
	if n.CPUs, err = parseInt("cpus_state", cpus[3]); err != nil {
		return n, err
	}
	if n.MemoryMiB, err = parseMemMiB("memory", f[4]); err != nil {
		return n, err
	}
	if n.AllocMemoryMiB, err = parseMemMiB("alloc_mem", f[5]); err != nil {
		return n, err
	}
	if n.GPUs, err = parseGPUGres("gres", f[6]); err != nil {
		return n, err
	}
	if n.GPUsUsed, err = parseGPUGres("gres_used", f[7]); err != nil {
		return n, err
	}
	return n, nil
}

// parsePartitions reads `scontrol show partition -o`: one line per partition.
func parsePartitions(out []byte) ([]Partition, error) {
	var parts []Partition
	nums, text := lines(out)
	for i, line := range text {
		p, err := parsePartitionLine(line)
		if err != nil {
			return nil, lineError("scontrol show partition", nums[i], line, "", err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func parsePartitionLine(line string) (Partition, error) {
	kv, err := keyValues(line)
	if err != nil {
		return Partition{}, err
	}
	p := Partition{Name: kv["PartitionName"], State: kv["State"], Default: kv["Default"] == "YES", Nodes: clean(kv["Nodes"])}
	if p.Name == "" {
		return p, &fieldError{"PartitionName", line, errors.New("missing")}
	}
	if p.State == "" {
		return p, &fieldError{"State", line, errors.New("missing")}
	}
	if p.MaxTime, err = parseDuration("MaxTime", kv["MaxTime"]); err != nil {
		return p, err
	}
	if p.TotalCPUs, err = parseInt("TotalCPUs", kv["TotalCPUs"]); err != nil {
		return p, err
	}
	if p.TotalNodes, err = parseInt("TotalNodes", kv["TotalNodes"]); err != nil {
		return p, err
	}
	tres, err := parseTRES("TRES", kv["TRES"])
	if err != nil {
		return p, err
	}
	p.GPUs = tres.GPUs
	return p, nil
}
