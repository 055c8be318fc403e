package scheduler

import (
	"math/bits"
	"slices"
)

// demand is one replica's request, compiled against the cluster's card classes.
type demand struct {
	job  *Job
	req  Request
	team string
	// cards is how many cards the replica needs and milli its share of each.
	cards int
	milli int
	mig   string
	// classOK says which card classes (model, memory) the request accepts.
	classOK []bool
	// steer marks the models the job's kind prefers, when the job names no model.
	steer map[string]bool
	// picks caches NVLink card choices by node topology, free cards and count.
	picks map[pickKey]uint64
}

// pickKey identifies one NVLink card choice: nodes of one topology with the same free
// cards choose alike.
type pickKey struct {
	topo  int
	cards int
	free  uint64
}

func newDemand(c *Cluster, job *Job, cfg Config) *demand {
	r := job.Request
	d := &demand{job: job, req: r, team: job.Team, mig: r.MIGProfile, picks: c.picks}
	switch {
	case r.MIGProfile != "":
		d.cards, d.milli = 1, 0
	case r.GPUs > 0:
		d.cards, d.milli = r.GPUs, perGPUMilli(r)
	}
	d.classOK = make([]bool, len(c.classes))
	for i, cl := range c.classes {
		d.classOK[i] = len(r.GPUModels) == 0 || slices.Contains(r.GPUModels, cl.model)
		if d.mig == "" && d.milli == 1000 && cl.memory < r.GPUMemoryMiB {
			d.classOK[i] = false
		}
	}
	if len(r.GPUModels) == 0 && len(cfg.KindModels[r.Kind]) > 0 {
		d.steer = map[string]bool{}
		for _, m := range cfg.KindModels[r.Kind] {
			d.steer[m] = true
		}
	}
	return d
}

// shareMemory is the card memory a share reserves: its limit, or its part of the card.
func (d *demand) shareMemory(g *gpuState) int64 {
	if d.req.GPUMemoryMiB > 0 {
		return d.req.GPUMemoryMiB
	}
	return g.memory * int64(d.milli) / 1000
}

// option is one way to place a replica on a node: which cards and how much of each.
type option struct {
	node  int
	n     int
	cards [MaxGPUsPerReplica]int8 // positions in the node's card list
	slice int                     // MIG slice on cards[0], or -1
	milli int
	mem   int64
	score float64
}

// options appends the ways the replica fits node n's devices; when there are none it
// returns the reason instead.
func (d *demand) options(ni int, n *nodeState, buf []option) ([]option, reason) {
	switch {
	case d.mig != "":
		return d.migOption(ni, n, buf)
	case d.cards == 0:
		return append(buf, option{node: ni, slice: -1}), reasonNone
	case d.milli < 1000:
		return d.shareOptions(ni, n, buf)
	}
	return d.wholeOption(ni, n, buf)
}

// shareOptions offers each card that can take the share, one per distinct card state:
// cards alike in class and free capacity score alike, and the lowest position stands for them.
func (d *demand) shareOptions(ni int, n *nodeState, buf []option) ([]option, reason) {
	start := len(buf)
	accepted := false
	for p := range n.gpus {
		g := &n.gpus[p]
		if g.mig || !d.classOK[g.class] {
			continue
		}
		mem := d.shareMemory(g)
		if mem > g.memory {
			continue
		}
		accepted = true
		if g.freeMilli < d.milli || g.freeMem < mem {
			continue
		}
		dup := false
		for _, o := range buf[start:] {
			h := &n.gpus[o.cards[0]]
			if h.class == g.class && h.freeMilli == g.freeMilli && h.freeMem == g.freeMem {
				dup = true
				break
			}
		}
		if !dup {
			o := option{node: ni, n: 1, slice: -1, milli: d.milli, mem: mem}
			o.cards[0] = int8(p)
			buf = append(buf, o)
		}
	}
	if len(buf) > start {
		return buf, reasonNone
	}
	if !accepted {
		return buf, reasonGPUModel
	}
	return buf, reasonGPUsBusy
}

// wholeOption picks the cards for whole GPUs: for one card the smallest that fits, for
// several the set with the most NVLink links among them, lowest positions first; for a
// job that requires NVLink, cards joined each to every other or none.
func (d *demand) wholeOption(ni int, n *nodeState, buf []option) ([]option, reason) {
	var free, usable uint64
	accepted := 0
	for p := range n.gpus {
		g := &n.gpus[p]
		if g.mig || !d.classOK[g.class] {
			continue
		}
		accepted++
		usable |= 1 << uint(p)
		if g.freeMilli == 1000 && g.freeMem == g.memory {
			free |= 1 << uint(p)
		}
	}
	switch {
	case accepted == 0:
		return buf, reasonGPUModel
	case accepted < d.cards:
		return buf, reasonGPUCount
	case bits.OnesCount64(free) < d.cards:
		return buf, reasonGPUsBusy
	}
	o := option{node: ni, n: d.cards, slice: -1, milli: 1000}
	var set uint64
	if d.req.NVLink {
		var ok bool
		if set, ok = linkedSet(n, free, d.cards); !ok {
			if _, could := linkedSet(n, usable, d.cards); could {
				return buf, reasonGPUsBusy
			}
			return buf, reasonNVLink
		}
	} else {
		set = d.pickWhole(n, free)
	}
	k := 0
	for p := range n.gpus {
		if set&(1<<uint(p)) != 0 {
			o.cards[k] = int8(p)
			o.mem += n.gpus[p].memory
			k++
		}
	}
	o.mem /= int64(d.cards)
	return append(buf, o), reasonNone
}

// pickWhole chooses d.cards cards out of the free set.
func (d *demand) pickWhole(n *nodeState, free uint64) uint64 {
	if d.cards == 1 {
		best := -1
		for p := range n.gpus {
			if free&(1<<uint(p)) != 0 && (best < 0 || n.gpus[p].memory < n.gpus[best].memory) {
				best = p
			}
		}
		return 1 << uint(best)
	}
	if n.topo == 0 {
		return lowestBits(free, d.cards)
	}
	key := pickKey{topo: n.topo, cards: d.cards, free: free}
	if set, ok := d.picks[key]; ok {
		return set
	}
	// Grow a set from each free card, adding the card with the most links into it;
	// keep the set with the most internal links.
	var bestSet uint64
	bestLinks := -1
	for seed := range n.gpus {
		if free&(1<<uint(seed)) == 0 {
			continue
		}
		set := uint64(1) << uint(seed)
		for bits.OnesCount64(set) < d.cards {
			next, nextLinks := -1, -1
			for p := range n.gpus {
				if free&(1<<uint(p)) == 0 || set&(1<<uint(p)) != 0 {
					continue
				}
				if l := bits.OnesCount64(n.gpus[p].peers & set); l > nextLinks {
					next, nextLinks = p, l
				}
			}
			set |= 1 << uint(next)
		}
		if l := n.links(set); l > bestLinks {
			bestSet, bestLinks = set, l
		}
	}
	d.picks[key] = bestSet
	return bestSet
}

// links counts the NVLink pairs inside a set of cards.
func (n *nodeState) links(set uint64) int {
	l := 0
	for p := range n.gpus {
		if set&(1<<uint(p)) != 0 {
			l += bits.OnesCount64(n.gpus[p].peers & set)
		}
	}
	return l / 2
}

// linkedSet finds k cards of set each joined by NVLink to every other, lowest positions
// first. The search is exact, unlike pickWhole's greedy growth: a job that requires
// NVLink must not wait while such cards are free.
func linkedSet(n *nodeState, set uint64, k int) (uint64, bool) {
	return linkedCards(func(p int) uint64 { return n.gpus[p].peers }, set, k)
}

// linkedCards finds k cards of set that are each among the peers of every other (a
// k-clique of the links), lowest positions first.
func linkedCards(peers func(p int) uint64, set uint64, k int) (uint64, bool) {
	var grow func(chosen, candidates uint64) (uint64, bool)
	grow = func(chosen, candidates uint64) (uint64, bool) {
		need := k - bits.OnesCount64(chosen)
		if need == 0 {
			return chosen, true
		}
		for bits.OnesCount64(candidates) >= need {
			p := bits.TrailingZeros64(candidates)
			candidates &^= 1 << uint(p)
			if got, ok := grow(chosen|1<<uint(p), candidates&peers(p)); ok {
				return got, true
			}
		}
		return 0, false
	}
	return grow(0, set)
}

func lowestBits(set uint64, k int) uint64 {
	var out uint64
	for ; k > 0; k-- {
		low := set & -set
		out |= low
		set &^= low
	}
	return out
}

// migOption picks a free slice of the profile on the fullest MIG card, to keep whole
// MIG cards free for larger profiles.
func (d *demand) migOption(ni int, n *nodeState, buf []option) ([]option, reason) {
	bestCard, bestSlice, bestUsed := -1, -1, -1
	offered := false
	for p := range n.gpus {
		g := &n.gpus[p]
		if !g.mig || !d.classOK[g.class] {
			continue
		}
		used, slice := 0, -1
		for s, m := range n.node.GPUs[p].MIG {
			if g.migUsed[s] {
				used++
				continue
			}
			if m.Profile == d.mig && slice < 0 {
				slice = s
			}
		}
		for _, m := range n.node.GPUs[p].MIG {
			offered = offered || m.Profile == d.mig
		}
		if slice >= 0 && used > bestUsed {
			bestCard, bestSlice, bestUsed = p, slice, used
		}
	}
	if bestCard < 0 {
		if offered {
			return buf, reasonMIGBusy
		}
		return buf, reasonMIG
	}
	g := &n.gpus[bestCard]
	s := n.node.GPUs[bestCard].MIG[bestSlice]
	o := option{node: ni, n: 1, slice: bestSlice, mem: s.MemoryMiB}
	if g.memory > 0 {
		o.milli = int(s.MemoryMiB * 1000 / g.memory)
	}
	o.cards[0] = int8(bestCard)
	return append(buf, o), reasonNone
}

// devices turns an option into the assignments the dispatcher hands to the agent.
func (o *option) devices(n *nodeState, classes []gpuClass) []DeviceAssignment {
	out := make([]DeviceAssignment, 0, o.n)
	for k := 0; k < o.n; k++ {
		p := int(o.cards[k])
		g := n.node.GPUs[p]
		da := DeviceAssignment{GPUIndex: g.Index, UUID: g.UUID, Model: classes[n.gpus[p].class].model, Milli: o.milli, MemoryMiB: o.mem}
		if o.slice >= 0 {
			da.MIGSlice = g.MIG[o.slice].ID
			da.MIGProfile = g.MIG[o.slice].Profile
		} else if o.milli == 1000 {
			da.MemoryMiB = g.MemoryMiB
		}
		out = append(out, da)
	}
	return out
}
