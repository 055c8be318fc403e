package tracebench

import "fmt"

// simNode is the harness's own account of one node: what PROTOCOL.md's filter, scores and
// metrics read. Every policy's decisions, Gantry's included, are applied here.
type simNode struct {
	name    string
	model   int // index into simCluster.models; -1 without GPUs
	cpuLeft int64
	memLeft int64
	left    []int // milli-GPU left per GPU, by device index
	// shareTags and wholeTags count the GPU pods bound here, for GpuClustering.
	shareTags, wholeTags int
	frag                 float64
	// sig hashes the model, CPU left and GPU lefts: all that FGD's score reads.
	sig uint64
}

// resign recomputes the node's state hash (FNV-1a over its fields).
func (n *simNode) resign() {
	h := uint64(14695981039346656037)
	add := func(v int64) {
		h ^= uint64(v)
		h *= 1099511628211
	}
	add(int64(n.model))
	add(n.cpuLeft)
	for _, l := range n.left {
		add(int64(l))
	}
	n.sig = h
}

func (n *simNode) idle() int64 {
	var s int64
	for _, l := range n.left {
		s += int64(l)
	}
	return s
}

// simCluster is the harness's cluster: nodes in name order and the fragmentation measure.
type simCluster struct {
	nodes    []simNode
	models   []string
	priority []int
	frag     *fragMeasure
	used     int64
	fragSum  float64
}

func newSimCluster(w *Workload) *simCluster {
	c := &simCluster{priority: w.Priority}
	ids := map[string]int{}
	for _, tn := range w.Nodes {
		n := simNode{name: tn.Name, model: -1, cpuLeft: tn.CPUMilli, memLeft: tn.MemoryMiB, left: make([]int, tn.GPUs)}
		for g := range n.left {
			n.left[g] = 1000
		}
		if tn.GPUs > 0 {
			id, ok := ids[tn.Model]
			if !ok {
				id = len(c.models)
				ids[tn.Model] = id
				c.models = append(c.models, tn.Model)
			}
			n.model = id
		}
		c.nodes = append(c.nodes, n)
	}
	c.frag = newFragMeasure(w.Typical, c.models)
	for i := range c.nodes {
		n := &c.nodes[i]
		n.frag = c.frag.node(n.model, n.cpuLeft, n.left)
		n.resign()
		c.fragSum += n.frag
	}
	return c
}

// accessible reports whether pod p may use node n's GPU model.
func (c *simCluster) accessible(n *simNode, p *TracePod) bool {
	if n.model < 0 {
		return false
	}
	if len(p.Spec) == 0 {
		return true
	}
	for _, s := range p.Spec {
		if s == c.models[n.model] {
			return true
		}
	}
	return false
}

// feasible is PROTOCOL.md §5.2's filter.
func (c *simCluster) feasible(n *simNode, p *TracePod) bool {
	if n.cpuLeft < p.CPUMilli || n.memLeft < p.MemoryMiB {
		return false
	}
	if p.Milli == 0 {
		return true
	}
	if len(n.left) == 0 || !c.accessible(n, p) {
		return false
	}
	if p.Num == 1 {
		for _, l := range n.left {
			if l >= p.Milli {
				return true
			}
		}
		return false
	}
	fit := 0
	for _, l := range n.left {
		fit += l / p.Milli
	}
	return fit >= p.Num
}

// bind applies a decision after checking it against the filter, so no policy can
// over-commit the harness's cluster.
func (c *simCluster) bind(node int, gpus []int, p *TracePod) error {
	n := &c.nodes[node]
	if n.cpuLeft < p.CPUMilli || n.memLeft < p.MemoryMiB {
		return fmt.Errorf("pod %s on node %s: cpu or memory over-committed", p.Name, n.name)
	}
	if p.Milli > 0 && len(gpus) != p.Num {
		return fmt.Errorf("pod %s on node %s: %d GPUs chosen, want %d", p.Name, n.name, len(gpus), p.Num)
	}
	if p.Milli == 0 && len(gpus) != 0 {
		return fmt.Errorf("pod %s on node %s: CPU-only pod given GPUs", p.Name, n.name)
	}
	if p.Milli > 0 && !c.accessible(n, p) {
		return fmt.Errorf("pod %s on node %s: model %s not in %v", p.Name, n.name, c.models[n.model], p.Spec)
	}
	seen := map[int]bool{}
	for _, g := range gpus {
		if g < 0 || g >= len(n.left) || seen[g] || n.left[g] < p.Milli {
			return fmt.Errorf("pod %s on node %s: GPU %d cannot take %d milli", p.Name, n.name, g, p.Milli)
		}
		seen[g] = true
	}
	n.cpuLeft -= p.CPUMilli
	n.memLeft -= p.MemoryMiB
	for _, g := range gpus {
		n.left[g] -= p.Milli
	}
	c.used += p.GPUDemand()
	switch {
	case p.Milli == 0:
	case p.Sharing():
		n.shareTags++
	default:
		n.wholeTags++
	}
	c.fragSum -= n.frag
	n.frag = c.frag.node(n.model, n.cpuLeft, n.left)
	n.resign()
	c.fragSum += n.frag
	return nil
}

// fragMeasure computes F(n) of PROTOCOL.md §6 against the typical pods.
type fragMeasure struct {
	pods []TypicalPod
	// access[p][m] says whether typical pod p may use model m.
	access [][]bool
}

func newFragMeasure(typical []TypicalPod, models []string) *fragMeasure {
	f := &fragMeasure{pods: typical, access: make([][]bool, len(typical))}
	for i, p := range typical {
		f.access[i] = make([]bool, len(models))
		for m, name := range models {
			f.access[i][m] = len(p.Spec) == 0
			for _, s := range p.Spec {
				if s == name {
					f.access[i][m] = true
				}
			}
		}
	}
	return f
}

// node returns F for a node of the given model, CPU left and GPU lefts, in milli-GPU.
func (f *fragMeasure) node(model int, cpuLeft int64, left []int) float64 {
	var idle int64
	for _, l := range left {
		idle += int64(l)
	}
	if idle == 0 {
		return 0
	}
	var frag float64
	for i := range f.pods {
		p := &f.pods[i]
		if p.Milli == 0 || model < 0 || !f.access[i][model] {
			frag += p.Weight * float64(idle)
			continue
		}
		fit, small := 0, int64(0)
		for _, l := range left {
			if l >= p.Milli {
				fit++
			} else {
				small += int64(l)
			}
		}
		if fit >= p.Num && cpuLeft >= p.CPUMilli {
			frag += p.Weight * float64(small)
		} else {
			frag += p.Weight * float64(idle)
		}
	}
	return frag
}
