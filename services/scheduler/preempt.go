package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// victim is a running job that a higher class may evict, with what evicting it costs.
type victim struct {
	job    Job
	class  PriorityClass
	allocs []Allocation
	// borrowed is set when it runs on quota its team borrowed; guaranteed when the
	// cluster has quotas and it runs within its team's.
	borrowed   bool
	guaranteed bool
	milli      int64         // GPU it holds
	progress   time.Duration // work since its last checkpoint, lost on eviction
}

// victimCost orders victims and victim sets: quota borrowed from other teams goes
// first (the GPUs of victims within their quota, then how many such victims there are),
// then the fewest GPUs lost, then the least progress lost, then the fewest jobs.
type victimCost struct {
	guaranteed     int64 // milli-GPU of victims running within their team's quota
	guaranteedJobs int
	milli          int64
	progress       time.Duration
	jobs           int
}

func (a victimCost) compare(b victimCost) int {
	return cmp.Or(cmp.Compare(a.guaranteed, b.guaranteed), cmp.Compare(a.guaranteedJobs, b.guaranteedJobs), cmp.Compare(a.milli, b.milli),
		cmp.Compare(a.progress, b.progress), cmp.Compare(a.jobs, b.jobs))
}

func costOf(vs []*victim) victimCost {
	var c victimCost
	for _, v := range vs {
		if v.guaranteed {
			c.guaranteed += v.milli
			c.guaranteedJobs++
		}
		c.milli += v.milli
		c.progress += v.progress
		c.jobs++
	}
	return c
}

// candidates are the running jobs a job of the given class may evict: preemptible and
// of a strictly lower class, never an equal or higher one.
func (s *Scheduler) candidates(c *Cluster, claimant PriorityClass) map[string]*victim {
	out := map[string]*victim{}
	for id := range c.preemptible {
		for _, r := range c.running[id] {
			s.addCandidate(c, claimant, r, out)
		}
	}
	return out
}

// addCandidate adds one running replica to the victims if its class ranks below the claimant's.
func (s *Scheduler) addCandidate(c *Cluster, claimant PriorityClass, r running, out map[string]*victim) {
	a := r.alloc
	pc, ok := s.cfg.class(a.Job.Request.Class)
	if !ok || pc.Weight >= claimant.Weight {
		return
	}
	v := out[a.Job.ID]
	if v == nil {
		v = &victim{job: a.Job, class: pc}
		out[a.Job.ID] = v
	}
	v.allocs = append(v.allocs, a)
	v.milli += a.Replica.GPUMilli()
	v.borrowed = v.borrowed || c.replicaBorrows(a.Job.Team, r.node, a.Replica)
	v.guaranteed = len(c.quotas.quotas) > 0 && !v.borrowed
	since := a.StartTime
	if a.CheckpointTime.After(since) {
		since = a.CheckpointTime
	}
	v.progress = max(v.progress, c.now.Sub(since))
}

// evict releases a victim's replicas from the cluster.
func (c *Cluster) evict(v *victim) {
	for _, a := range v.allocs {
		c.remove(a.Job.ID, a.Replica.Replica)
	}
}

// restore puts an evicted victim back.
func (c *Cluster) restore(v *victim) {
	for _, a := range v.allocs {
		// Re-adding what was just removed always fits.
		_ = c.add(a)
	}
}

// preempt places the job by evicting the cheapest set of victims for each replica in
// turn. On success the victims are released from the cluster and the job's placement
// is returned unassumed; on failure the cluster is as it was.
func (s *Scheduler) preempt(c *Cluster, job *Job, class PriorityClass, lim limits) (Placement, []*victim, bool) {
	cands := s.candidates(c, class)
	if len(cands) == 0 {
		return Placement{}, nil, false
	}
	byNode := make([][]*victim, len(c.nodes))
	for _, v := range sortedVictims(cands) {
		for _, a := range v.allocs {
			i := c.byID[a.Replica.NodeID]
			if !slices.Contains(byNode[i], v) {
				byNode[i] = append(byNode[i], v)
			}
		}
	}
	replicas := max(job.Request.Replicas, 1)
	var evicted []*victim
	var placed []ReplicaPlacement
	undo := func() {
		for _, rp := range placed {
			c.chargeReplica(job.Team, c.byID[rp.NodeID], rp, -1)
			c.unapply(c.byID[rp.NodeID], rp)
		}
		for _, v := range evicted {
			c.restore(v)
		}
	}
	for r := 0; r < replicas; r++ {
		st := newStack(c, s.cfg, job, lim)
		o, ok := st.best()
		if !ok {
			node, set := s.cheapestSet(c, job, lim, byNode, evicted)
			if node < 0 {
				undo()
				return Placement{}, nil, false
			}
			for _, v := range set {
				c.evict(v)
			}
			evicted = append(evicted, set...)
			st = newStack(c, s.cfg, job, limits{only: node, reserved: lim.reserved})
			if o, ok = st.best(); !ok {
				undo()
				return Placement{}, nil, false
			}
		}
		rp := st.replica(o, r)
		if err := c.apply(o.node, rp); err != nil {
			undo()
			return Placement{}, nil, false
		}
		c.chargeReplica(job.Team, o.node, rp, 1)
		placed = append(placed, rp)
	}
	for _, rp := range placed {
		c.chargeReplica(job.Team, c.byID[rp.NodeID], rp, -1)
		c.unapply(c.byID[rp.NodeID], rp)
	}
	return Placement{JobID: job.ID, Replicas: placed}, evicted, true
}

// sortedVictims lists victims cheapest first, by ID on ties so plans are deterministic.
func sortedVictims(m map[string]*victim) []*victim {
	out := make([]*victim, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *victim) int {
		return cmp.Or(costOf([]*victim{a}).compare(costOf([]*victim{b})), strings.Compare(a.job.ID, b.job.ID))
	})
	return out
}

// maxVictimSeeds bounds how many victims per node start a search for a victim set.
const maxVictimSeeds = 16

// cheapestSet finds, over all nodes, the cheapest set of victims whose eviction lets one
// replica of the job fit on one node. For each node it starts from each victim in turn,
// evicts further victims cheapest first until the replica fits, then gives back every
// victim the fit does not need, so no more is evicted than needed. The cluster is left
// as it was.
func (s *Scheduler) cheapestSet(c *Cluster, job *Job, lim limits, byNode [][]*victim, gone []*victim) (int, []*victim) {
	bestNode := -1
	var best []*victim
	var bestCost victimCost
	probe := newStack(c, s.cfg, job, limits{only: -1, reserved: lim.reserved})
	for node, all := range byNode {
		if lim.reserved != nil && lim.reserved[node] {
			continue
		}
		var vs []*victim
		for _, v := range all {
			if !slices.Contains(gone, v) {
				vs = append(vs, v)
			}
		}
		for seed := 0; seed < len(vs) && seed < maxVictimSeeds; seed++ {
			order := append([]*victim{vs[seed]}, slices.Delete(slices.Clone(vs), seed, seed+1)...)
			if set, ok := minimalSet(c, order, func() bool { return probe.fitsOn(node) }); ok {
				if cost := costOf(set); bestNode < 0 || cost.compare(bestCost) < 0 {
					bestNode, best, bestCost = node, set, cost
				}
			}
		}
	}
	return bestNode, best
}

// minimalSet evicts victims in order until fits holds, then gives back, most expensive
// first, each one the fit does not need. The cluster is left as it was.
func minimalSet(c *Cluster, order []*victim, fits func() bool) ([]*victim, bool) {
	var set []*victim
	ok := false
	for _, v := range order {
		c.evict(v)
		set = append(set, v)
		if ok = fits(); ok {
			break
		}
	}
	if ok {
		for k := len(set) - 1; k >= 0 && len(set) > 1; k-- {
			c.restore(set[k])
			if fits() {
				set = slices.Delete(set, k, k+1)
			} else {
				c.evict(set[k])
			}
		}
	}
	for _, v := range set {
		c.restore(v)
	}
	return set, ok
}

// preemptionReason says why a victim is evicted.
func preemptionReason(v *victim, claimant Job, class PriorityClass) string {
	why := fmt.Sprintf("preempted for %s job %s (class %s outranks %s)", class.Name, claimant.ID, class.Name, v.class.Name)
	if v.borrowed {
		why += "; it ran on quota its team borrowed from the cohort"
	}
	return why
}
