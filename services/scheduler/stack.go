package scheduler

// stack is the placement chain for one replica: feasibility checks, device options,
// quota, then scorers; the best option wins, the earlier node on ties. newStack is the
// one place that builds it, so the dispatcher's per-job path and the full cycle rank
// alike.
type stack struct {
	c        *Cluster
	d        *demand
	checkers []checker
	scorers  []scorer
	cfg      Config
	lim      limits
	quotaWhy string
	rejected rejections
	buf      []option
}

// limits narrow where a stack may place: the full cycle holds nodes for a reservation,
// probes single nodes when choosing preemption victims, and asks whether a job is held
// back by quota alone.
type limits struct {
	// reserved marks nodes held for a blocked job; nil holds none.
	reserved []bool
	// only, when at least 0, is the one node to consider.
	only        int
	ignoreQuota bool
}

// anywhere is no limit at all.
func anywhere() limits { return limits{only: -1} }

func newStack(c *Cluster, cfg Config, job *Job, lim limits) *stack {
	d := newDemand(c, job, cfg)
	s := &stack{c: c, d: d, cfg: cfg, checkers: nodeCheckers(d), scorers: make([]scorer, 0, 5), lim: lim, buf: make([]option, 0, 8)}
	clear(c.memo)
	s.scorers = append(s.scorers, packingScorer{c: c, cpu: d.req.CPUMilli})
	if d.cards == 1 && d.milli < 1000 && d.mig == "" && cfg.PatternWeight > 0 {
		s.scorers = append(s.scorers, patternScorer{c: c, weight: cfg.PatternWeight})
	}
	if d.cards > 1 && d.milli == 1000 && cfg.NVLinkBonus > 0 {
		s.scorers = append(s.scorers, nvlinkScorer{bonus: cfg.NVLinkBonus})
	}
	if d.milli == 1000 && d.req.GPUMemoryMiB > 0 && cfg.MemoryFitWeight > 0 {
		s.scorers = append(s.scorers, memoryFitScorer{weight: cfg.MemoryFitWeight, want: d.req.GPUMemoryMiB})
	}
	if d.steer != nil && cfg.KindBonus > 0 {
		s.scorers = append(s.scorers, kindScorer{bonus: cfg.KindBonus, classes: c.classes, steer: d.steer})
	}
	if d.req.SpotAllowed && cfg.SpotBonus > 0 {
		s.scorers = append(s.scorers, spotScorer{bonus: cfg.SpotBonus})
	}
	if c.maxUnitPrice > 0 && cfg.PriceWeight > 0 {
		s.scorers = append(s.scorers, priceScorer{weight: cfg.PriceWeight, max: c.maxUnitPrice})
	}
	return s
}

// best returns the highest-scoring option, or false when none is feasible. It visits
// only the nodes the capacity index says may hold the GPUs (the others count as lacking
// free GPUs) and scores a node only if no node before it in the same state was scored:
// alike nodes score alike and ties go to the earlier one. On a cluster larger than
// Config.FullScanNodes it stops after Config.SampleNodes feasible nodes; on a smaller
// one a failed search looks at every node again, so the explanation names each node's
// own reason.
func (s *stack) best() (option, bool) {
	small := len(s.c.nodes) <= s.cfg.FullScanNodes
	o, ok := s.search(true, !small)
	if !ok && small && s.rejected[reasonGPUsBusy] > 0 {
		s.rejected = rejections{}
		return s.search(false, false)
	}
	return o, ok
}

// search scans the nodes, through the capacity index when indexed, up to
// Config.SampleNodes feasible ones when sampled.
func (s *stack) search(indexed, sampled bool) (option, bool) {
	best := option{node: -1}
	from, to := 0, len(s.c.nodes)
	if s.lim.only >= 0 {
		from, to = s.lim.only, s.lim.only+1
	}
	var set []uint64
	if indexed {
		set = s.c.idx.candidates(s.d)
	}
	sample := 0
	if sampled {
		sample = s.cfg.SampleNodes
	}
	clear(s.c.seen)
	found := 0
	for i := from; i < to; i++ {
		if set != nil {
			j := next(set, i, to)
			s.rejected[reasonGPUsBusy] += j - i
			if i = j; i == to {
				break
			}
		}
		n := &s.c.nodes[i]
		if s.lim.reserved != nil && s.lim.reserved[i] {
			s.rejected[reasonReserved]++
			continue
		}
		if !s.feasible(n) {
			continue
		}
		if _, dup := s.c.seen[n.sig]; dup {
			found++
		} else {
			s.c.seen[n.sig] = struct{}{}
			if !s.score(i, n, &best) {
				continue
			}
			found++
		}
		if sample > 0 && found >= sample {
			break
		}
	}
	return best, best.node >= 0
}

// score offers node i's options to the running best; false when the node has none.
func (s *stack) score(i int, n *nodeState, best *option) bool {
	var why reason
	s.buf, why = s.d.options(i, n, s.buf[:0])
	if why != reasonNone {
		s.rejected[why]++
		return false
	}
	admitted := false
	for k := range s.buf {
		o := &s.buf[k]
		if !s.admit(n, o) {
			continue
		}
		admitted = true
		for _, sc := range s.scorers {
			o.score += sc.score(n, o)
		}
		if best.node < 0 || o.score > best.score {
			*best = *o
		}
	}
	if !admitted {
		s.rejected[reasonQuota]++
	}
	return admitted
}

// fitsOn reports whether one replica fits on the given node as the cluster stands now.
// The stack is reused across nodes and cluster changes, as its scores stay valid.
func (s *stack) fitsOn(node int) bool {
	s.lim.only = node
	s.rejected = rejections{}
	_, ok := s.best()
	return ok
}

func (s *stack) feasible(n *nodeState) bool {
	for _, ch := range s.checkers {
		if why := ch.check(n); why != reasonNone {
			s.rejected[why]++
			return false
		}
	}
	return true
}

// admit checks the team's quota for the option: its GPUs under their model, and the
// replica's CPU and RAM under the same model (AnyModel without GPUs).
func (s *stack) admit(n *nodeState, o *option) bool {
	if s.lim.ignoreQuota || !s.c.quotas.teams[s.d.team] {
		return true
	}
	model := AnyModel
	if o.n > 0 {
		model = s.c.classes[n.gpus[o.cards[0]].class].model
	}
	ok, why := s.c.quotas.admit(s.d.team, model, amounts{resGPU: int64(o.n * o.milli), resCPU: s.d.req.CPUMilli, resRAM: s.d.req.RAMMiB})
	if !ok {
		s.quotaWhy = why
	}
	return ok
}

// replica turns the chosen option into a replica placement.
func (s *stack) replica(o option, index int) ReplicaPlacement {
	n := &s.c.nodes[o.node]
	return ReplicaPlacement{
		Replica:    index,
		NodeID:     n.node.ID,
		Devices:    o.devices(n, s.c.classes),
		CPUMilli:   s.d.req.CPUMilli,
		RAMMiB:     s.d.req.RAMMiB,
		ScratchMiB: s.d.req.ScratchMiB,
	}
}
