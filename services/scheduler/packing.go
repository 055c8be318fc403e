package scheduler

import (
	"cmp"
	"slices"
)

// packing is the fragmentation measure placement descends: for a node, the GPU (in
// milli-GPU) that the expected workload could not use.
//
// FGD (Weng et al., ATC'23) counts, for each typical shape, the idle GPU that one more
// task of that shape could not use. Gantry asks instead how much idle GPU would stay
// unused if the node were filled with copies of the shape, counting both GPU pieces too
// small for it and GPUs that the node's CPU cannot feed. It then adds a stranding term:
// idle GPU beyond what the node's CPU can serve at the workload's mean CPU per GPU.
// Both terms catch what FGD misses: cards stranded on nodes whose CPU ran out.
//
// Shapes are weighted by frequency times their scarcity: all nodes over the nodes that
// could host one when empty. A shape that few nodes can ever host (eight
// GPUs and 120 cores, say) then weighs enough that small jobs leave those nodes whole,
// where FGD's frequency weights, cut at 95% of requests, ignore such shapes entirely.
type packing struct {
	shapes []packShape
	// groups are the distinct (share per GPU, accepted card classes) of the GPU shapes:
	// shapes in a group count the same copies.
	groups []copyGroup
	// cpuOnly is the weight of the shapes that need no GPU.
	cpuOnly float64
	// cpuPerMilli is the workload's mean CPU (milli-cores) per milli-GPU.
	cpuPerMilli float64
	stranding   float64
	// worth[class] is what a card of the class with f milli-GPU free can still be worth
	// to the workload, in cards (see patterns.go); nil for a class the workload cannot use.
	worth [][]float64
}

type packShape struct {
	group  int
	gpus   int64
	demand int64 // gpus × share per GPU
	cpu    int64
	weight float64
}

// copyGroup counts, per card, how many pieces of its share a card with some free
// milli-GPU holds: fits[free] (a table, to keep division out of the hot path).
type copyGroup struct {
	milli  int
	access []bool // per card class
	fits   []int64
}

// packShapes is how many shapes the measure keeps, and packCoverage the share of the
// scarcity-weighted workload they must cover: each shape costs a step per option scored.
const (
	packShapes   = 64
	packCoverage = 1.0
)

func newPacking(w Workload, classes []gpuClass, nodes []nodeState, strandingWeight float64) packing {
	p := packing{stranding: strandingWeight}
	var cpu, gpu float64
	for _, s := range w {
		if s.GPUs > 0 && s.GPUMilli > 0 && s.GPUMilli <= 1000 {
			cpu += s.Weight * float64(s.CPUMilli)
			gpu += s.Weight * float64(s.GPUs*s.GPUMilli)
		}
	}
	if gpu > 0 {
		p.cpuPerMilli = cpu / gpu
	}
	p.worth = make([][]float64, len(classes))
	for c, cl := range classes {
		p.worth[c] = workloadWorth(w, cl)
	}
	for _, ws := range scarcityWeighted(w, classes, nodes) {
		s := ws.shape
		if s.GPUs == 0 {
			p.cpuOnly += ws.weight
			continue
		}
		g := slices.IndexFunc(p.groups, func(g copyGroup) bool { return g.milli == s.GPUMilli && slices.Equal(g.access, ws.access) })
		if g < 0 {
			g = len(p.groups)
			fits := make([]int64, 1001)
			for free := range fits {
				fits[free] = int64(free / s.GPUMilli)
			}
			p.groups = append(p.groups, copyGroup{milli: s.GPUMilli, access: ws.access, fits: fits})
		}
		p.shapes = append(p.shapes, packShape{group: g, gpus: int64(s.GPUs), demand: int64(s.GPUs * s.GPUMilli), cpu: s.CPUMilli, weight: ws.weight})
	}
	return p
}

type weightedShape struct {
	shape  Shape
	access []bool // per card class
	weight float64
}

// scarcityWeighted reweights the shapes by how scarce the nodes that could host them
// are (all nodes over capable ones), drops shapes no node can host, and
// keeps the heaviest that cover packCoverage of the weight, at most packShapes, with
// weights renormalised to 1.
func scarcityWeighted(w Workload, classes []gpuClass, nodes []nodeState) []weightedShape {
	// Nodes alike in CPU and cards per class host the same shapes: count each kind once.
	type kind struct {
		cpu   int64
		cards string // cards per class, one byte each
	}
	kinds := map[kind]int{}
	for i := range nodes {
		per := make([]byte, len(classes))
		for _, g := range nodes[i].gpus {
			if !g.mig && per[g.class] < 255 {
				per[g.class]++
			}
		}
		kinds[kind{nodes[i].node.CPUMilli, string(per)}]++
	}
	var out []weightedShape
	var total float64
	for _, s := range w {
		if s.Weight <= 0 || (s.GPUs > 0 && (s.GPUMilli <= 0 || s.GPUMilli > 1000)) {
			continue
		}
		ws := weightedShape{shape: s, access: make([]bool, len(classes))}
		for c, cl := range classes {
			ws.access[c] = (len(s.GPUModels) == 0 || slices.Contains(s.GPUModels, cl.model)) && cl.memory >= s.GPUMemoryMiB
		}
		capable := 0
		for k, count := range kinds {
			if k.cpu < s.CPUMilli {
				continue
			}
			cards := 0
			for c := range k.cards {
				if ws.access[c] {
					cards += int(k.cards[c])
				}
			}
			if cards >= s.GPUs {
				capable += count
			}
		}
		if capable == 0 {
			continue
		}
		ws.weight = s.Weight * float64(len(nodes)) / float64(capable)
		total += ws.weight
		out = append(out, ws)
	}
	slices.SortStableFunc(out, func(a, b weightedShape) int { return cmp.Compare(b.weight, a.weight) })
	var covered, kept float64
	n := 0
	for n < len(out) && n < packShapes && covered < packCoverage*total {
		covered += out[n].weight
		n++
	}
	out = out[:n]
	for _, ws := range out {
		kept += ws.weight
	}
	for i := range out {
		out[i].weight /= kept
	}
	return out
}

// copiesOf fills out, per group, how many of its pieces the node's cards could host.
func (p *packing) copiesOf(cards []gpuState, out []int64) {
	for g := range out {
		out[g] = 0
	}
	for i := range cards {
		p.addCard(&cards[i], cards[i].freeMilli, 1, out)
	}
}

// addCard adds (sign 1) or removes (sign -1) one card's pieces at the given free milli.
func (p *packing) addCard(card *gpuState, free int, sign int64, out []int64) {
	if card.mig {
		return
	}
	for g := range p.groups {
		grp := &p.groups[g]
		if grp.access[card.class] {
			out[g] += sign * grp.fits[free]
		}
	}
}

// cost is the node's fragmentation plus its weighted stranding, in milli-GPU.
func (p *packing) cost(idle, cpu int64, copies []int64) float64 {
	if idle <= 0 {
		return 0
	}
	// To a task that needs no GPU every idle GPU is a fragment.
	f := p.cpuOnly * float64(idle)
	for s := range p.shapes {
		sh := &p.shapes[s]
		k := copies[sh.group] / sh.gpus
		if sh.cpu > 0 && cpu < k*sh.cpu {
			k = cpu / sh.cpu
		}
		if usable := k * sh.demand; usable < idle {
			f += sh.weight * float64(idle-usable)
		}
	}
	if p.cpuPerMilli > 0 {
		if strand := float64(idle) - float64(cpu)/p.cpuPerMilli; strand > 0 {
			f += p.stranding * strand
		}
	}
	return f
}
