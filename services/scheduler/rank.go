package scheduler

// scorer ranks one option; the stack adds every scorer's value. Scores are in
// milli-GPU-equivalents so that the packing measure and the bonuses compare.
type scorer interface {
	score(n *nodeState, o *option) float64
}

// packingScorer rewards the option by how much it lowers the node's fragmentation and
// stranding (see packing); options that raise them score below zero.
type packingScorer struct {
	c   *Cluster
	cpu int64
}

func (s packingScorer) score(n *nodeState, o *option) float64 {
	key := n.packSig
	for k := 0; k < o.n; k++ {
		key ^= mix(cardSig(&n.gpus[o.cards[k]]) + uint64(k))
	}
	// The job's CPU is in the key so that stacks of different jobs never share scores.
	key = mix(key ^ uint64(o.milli)<<40 ^ mix(uint64(s.cpu)))
	if v, ok := s.c.memo[key]; ok {
		return v
	}
	v := s.delta(n, o)
	s.c.memo[key] = v
	return v
}

// delta is the drop in the node's packing cost the option brings.
func (s packingScorer) delta(n *nodeState, o *option) float64 {
	copies := s.c.scratch
	copy(copies, n.copies)
	idle := n.idle
	for k := 0; k < o.n; k++ {
		g := &n.gpus[o.cards[k]]
		if g.mig {
			continue
		}
		s.c.pack.addCard(g, g.freeMilli, -1, copies)
		s.c.pack.addCard(g, g.freeMilli-o.milli, 1, copies)
		idle -= int64(o.milli)
	}
	return n.cost - s.c.pack.cost(idle, n.freeCPU-s.cpu, copies)
}

// patternScorer charges a share for the card worth it wastes: what its card could still
// earn beyond what is left after it and its own worth, priced by the workload's packing
// patterns (see patterns.go). A share that completes a pattern an optimal packing uses
// pays nothing; one that leaves a gap only rare requests fill pays for the gap.
type patternScorer struct {
	c      *Cluster
	weight float64
}

func (s patternScorer) score(n *nodeState, o *option) float64 {
	g := &n.gpus[o.cards[0]]
	worth := s.c.pack.worth[g.class]
	if worth == nil {
		return 0
	}
	lost := worth[g.freeMilli] - worth[g.freeMilli-o.milli] - worth[o.milli]
	return -s.weight * 1000 * max(lost, 0)
}

// nvlinkScorer rewards multi-GPU options by the share of card pairs joined by NVLink.
type nvlinkScorer struct{ bonus float64 }

func (s nvlinkScorer) score(n *nodeState, o *option) float64 {
	var set uint64
	for k := 0; k < o.n; k++ {
		set |= 1 << uint(o.cards[k])
	}
	pairs := o.n * (o.n - 1) / 2
	return s.bonus * float64(n.links(set)) / float64(pairs)
}

// memoryFitScorer penalises cards larger than the memory the job named, so a 40 GiB job
// takes a 40 GiB card and leaves the 80 GiB one for a job that needs it.
type memoryFitScorer struct {
	weight float64
	want   int64
}

func (s memoryFitScorer) score(n *nodeState, o *option) float64 {
	var waste float64
	for k := 0; k < o.n; k++ {
		g := &n.gpus[o.cards[k]]
		if g.memory > 0 {
			waste += float64(g.memory-s.want) / float64(g.memory)
		}
	}
	return -s.weight * waste / float64(o.n)
}

// kindScorer steers jobs that name no model to the models their kind prefers.
type kindScorer struct {
	bonus   float64
	classes []gpuClass
	steer   map[string]bool
}

func (s kindScorer) score(n *nodeState, o *option) float64 {
	if o.n > 0 && s.steer[s.classes[n.gpus[o.cards[0]].class].model] {
		return s.bonus
	}
	return 0
}

// priceScorer prefers cheaper nodes, in proportion to how far below the dearest they are.
type priceScorer struct{ weight, max float64 }

func (s priceScorer) score(n *nodeState, _ *option) float64 {
	return s.weight * (1 - unitPrice(n.node)/s.max)
}

// spotScorer prefers spot nodes for jobs that allow spot: they cost less.
type spotScorer struct{ bonus float64 }

func (s spotScorer) score(n *nodeState, _ *option) float64 {
	if n.node.Spot {
		return s.bonus
	}
	return 0
}
