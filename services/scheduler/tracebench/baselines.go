package tracebench

import (
	"math"
	"math/rand"
	"slices"
)

// decider places one pod: the chosen node (index into simCluster.nodes) and its GPUs.
type decider func(p *TracePod) (node int, gpus []int, ok bool)

// scoreFunc is a baseline's integer node score (PROTOCOL.md §7); higher wins.
type scoreFunc func(c *simCluster, n *simNode, p *TracePod) int64

// pickFunc chooses the GPUs inside the chosen node (PROTOCOL.md §8).
type pickFunc func(c *simCluster, n *simNode, p *TracePod) []int

// Normalisation constants of §7.
const (
	maxCPU = 128000.0
	maxGPU = 8000.0
)

// newScoredDecider runs §5: filter, pick the single feasible node or the best score with
// the fixed node priority breaking ties, then choose GPUs.
func newScoredDecider(c *simCluster, score scoreFunc, pick pickFunc) decider {
	feasible := make([]int, 0, len(c.nodes))
	return func(p *TracePod) (int, []int, bool) {
		feasible = feasible[:0]
		for i := range c.nodes {
			if c.feasible(&c.nodes[i], p) {
				feasible = append(feasible, i)
			}
		}
		if len(feasible) == 0 {
			return 0, nil, false
		}
		best := feasible[0]
		if len(feasible) > 1 {
			bestScore := int64(math.MinInt64)
			for _, i := range feasible {
				s := score(c, &c.nodes[i], p)
				if s > bestScore || (s == bestScore && c.priority[i] < c.priority[best]) {
					best, bestScore = i, s
				}
			}
		}
		gpus := pick(c, &c.nodes[best], p)
		return best, gpus, gpus != nil || p.Milli == 0
	}
}

// newRandomDecider chooses a feasible node uniformly and, for sharing pods, a GPU uniformly.
func newRandomDecider(c *simCluster, rng *rand.Rand) decider {
	feasible := make([]int, 0, len(c.nodes))
	return func(p *TracePod) (int, []int, bool) {
		feasible = feasible[:0]
		for i := range c.nodes {
			if c.feasible(&c.nodes[i], p) {
				feasible = append(feasible, i)
			}
		}
		if len(feasible) == 0 {
			return 0, nil, false
		}
		best := feasible[0]
		if len(feasible) > 1 {
			best = feasible[rng.Intn(len(feasible))]
		}
		n := &c.nodes[best]
		if !p.Sharing() {
			gpus := pickBest(c, n, p)
			return best, gpus, gpus != nil || p.Milli == 0
		}
		var fits []int
		for g, l := range n.left {
			if l >= p.Milli {
				fits = append(fits, g)
			}
		}
		return best, []int{fits[rng.Intn(len(fits))]}, true
	}
}

// pickWhole returns the first num fully free GPUs in index order.
func pickWhole(n *simNode, num int) []int {
	var gpus []int
	for g, l := range n.left {
		if l == 1000 {
			gpus = append(gpus, g)
			if len(gpus) == num {
				return gpus
			}
		}
	}
	return nil
}

// pickBest is "best" GPU selection: whole GPUs by index; a share on the tightest GPU.
func pickBest(_ *simCluster, n *simNode, p *TracePod) []int {
	switch {
	case p.Milli == 0:
		return nil
	case p.Milli == 1000:
		return pickWhole(n, p.Num)
	}
	return ascendingLeft(n.left, p.Milli, p.Num)
}

// ascendingLeft takes the first num GPUs with left ≥ milli in ascending order of left,
// lowest index first among equals.
func ascendingLeft(left []int, milli, num int) []int {
	order := make([]int, len(left))
	for g := range order {
		order[g] = g
	}
	slices.SortStableFunc(order, func(a, b int) int { return left[a] - left[b] })
	var gpus []int
	for _, g := range order {
		if left[g] >= milli {
			gpus = append(gpus, g)
			if len(gpus) == num {
				return gpus
			}
		}
	}
	return nil
}

// pickFirst is first-fit GPU selection: the lowest-index GPUs that can take the share.
func pickFirst(_ *simCluster, n *simNode, p *TracePod) []int {
	if p.Milli == 0 {
		return nil
	}
	var gpus []int
	for g, l := range n.left {
		if l >= p.Milli {
			gpus = append(gpus, g)
			if len(gpus) == p.Num {
				return gpus
			}
		}
	}
	return nil
}

func scoreFirstFit(*simCluster, *simNode, *TracePod) int64 { return 0 }

func scoreBestFit(_ *simCluster, n *simNode, p *TracePod) int64 {
	cpuRest := float64(n.cpuLeft - p.CPUMilli)
	gpuRest := float64(n.idle() - p.GPUDemand())
	return int64(100 * (1 - (0.5*cpuRest/maxCPU + 0.5*gpuRest/maxGPU)))
}

func scoreDotProd(_ *simCluster, n *simNode, p *TracePod) int64 {
	dot := (float64(n.cpuLeft)/maxCPU)*(float64(p.CPUMilli)/maxCPU) +
		(float64(n.idle())/maxGPU)*(float64(p.GPUDemand())/maxGPU)
	return int64(100 * (1 - 0.5*dot))
}

func scoreGPUPacking(_ *simCluster, n *simNode, p *TracePod) int64 {
	if p.Milli == 0 {
		return 0
	}
	free := 0
	for _, l := range n.left {
		if l == 1000 {
			free++
		}
	}
	if free == len(n.left) {
		return int64(max(33-free, free))
	}
	chosen := ascendingLeft(n.left, p.Milli, p.Num)
	k, sum := 0, 0
	for _, g := range chosen {
		if n.left[g] == 1000 {
			k++
		}
		sum += n.left[g] * 100 / 1000
	}
	if k >= 1 {
		return int64(max(50-k, 33))
	}
	return int64(max(100-sum/10, 50))
}

func scoreGPUClustering(_ *simCluster, n *simNode, p *TracePod) int64 {
	if p.Milli == 0 {
		return 0
	}
	b := int64(25 * (8000 - n.idle()) / 8000)
	same, other := n.wholeTags, n.shareTags
	if p.Sharing() {
		same, other = n.shareTags, n.wholeTags
	}
	switch {
	case same > 0 && other == 0:
		return b + 75
	case same > 0:
		return b + 50
	case other == 0:
		return b + 25
	}
	return b
}

// fgdQuantised is q(Δ) = trunc(100·sigmoid(Δ/1000)).
func fgdQuantised(delta float64) int64 {
	return int64(100 / (1 + math.Exp(-delta/1000)))
}

// fgdBest returns FGD's score for the node and the GPUs the hypothetical placement uses.
func fgdBest(c *simCluster, n *simNode, p *TracePod) (int64, []int) {
	cpu := n.cpuLeft - p.CPUMilli
	switch {
	case p.Milli == 0:
		return fgdQuantised(n.frag - c.frag.node(n.model, cpu, n.left)), nil
	case p.Sharing():
		left := slices.Clone(n.left)
		best, bestGPU := int64(math.MinInt64), -1
		for g, l := range n.left {
			if l < p.Milli {
				continue
			}
			left[g] = l - p.Milli
			if q := fgdQuantised(n.frag - c.frag.node(n.model, cpu, left)); q > best {
				best, bestGPU = q, g
			}
			left[g] = l
		}
		return best, []int{bestGPU}
	}
	gpus := ascendingLeft(n.left, p.Milli, p.Num)
	left := slices.Clone(n.left)
	for _, g := range gpus {
		left[g] -= p.Milli
	}
	return fgdQuantised(n.frag - c.frag.node(n.model, cpu, left)), gpus
}

// newFGDScore returns FGD's score with a per-pod memo: nodes in the same state (model,
// CPU left, GPU lefts) score the same, and many nodes are alike.
func newFGDScore() scoreFunc {
	var last *TracePod
	memo := map[uint64]int64{}
	return func(c *simCluster, n *simNode, p *TracePod) int64 {
		if p != last {
			clear(memo)
			last = p
		}
		if s, ok := memo[n.sig]; ok {
			return s
		}
		s, _ := fgdBest(c, n, p)
		memo[n.sig] = s
		return s
	}
}

func pickFGD(c *simCluster, n *simNode, p *TracePod) []int {
	if p.Sharing() {
		_, gpus := fgdBest(c, n, p)
		return gpus
	}
	return pickBest(c, n, p)
}
