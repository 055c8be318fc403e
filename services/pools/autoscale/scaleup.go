package autoscale

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/services/scheduler"
)

// scaleUp is one decision's search for the nodes that waiting jobs need.
type scaleUp struct {
	a        *Autoscaler
	in       Input
	pools    []Pool
	workload scheduler.Workload
	// planned are the new nodes chosen so far and plannedRun what was put on them.
	planned    []scheduler.Node
	plannedRun []scheduler.Allocation
	nodePool   map[string]string
	cluster    *scheduler.Cluster // over planned; nil when it must be rebuilt
	fresh      map[[2]int]*scheduler.Cluster
	added      map[string]int
	jobs       map[string][]string
	demand     map[string]Demand
	left       map[string]int64
	held       []Held
	heldAt     map[[2]string]int
}

func newScaleUp(a *Autoscaler, in Input, pools []Pool, w scheduler.Workload) *scaleUp {
	s := &scaleUp{a: a, in: in, pools: pools, workload: w, nodePool: map[string]string{}, fresh: map[[2]int]*scheduler.Cluster{},
		added: map[string]int{}, jobs: map[string][]string{}, demand: map[string]Demand{}, left: map[string]int64{}, heldAt: map[[2]string]int{}}
	for team, v := range in.Budgets {
		s.left[team] = v
	}
	return s
}

// run handles, in the plan's priority order, every job the plan leaves waiting that
// more nodes could start.
func (s *scaleUp) run(plan scheduler.Plan, pending []scheduler.Job) {
	byID := make(map[string]scheduler.Job, len(pending))
	for _, j := range pending {
		byID[j.ID] = j
	}
	roomMade := map[string]bool{}
	for _, p := range plan.Preemptions {
		roomMade[p.For] = true
	}
	// Jobs that will start on booting machines are demand of those machines' pools.
	for _, p := range plan.Placements {
		if pool, ok := s.bootingPool(p.Replicas[0].NodeID); ok {
			s.credit(pool, byID[p.JobID])
		}
	}
	for _, u := range plan.Unplaced {
		j, ok := byID[u.JobID]
		// A job held back by its team's quota would not start on new nodes either.
		if !ok || roomMade[j.ID] || u.Explanation.Rejections[scheduler.RejectQuota] > 0 || strings.HasPrefix(u.Explanation.Reason, "invalid request") {
			continue
		}
		s.handle(j)
	}
}

func (s *scaleUp) bootingPool(nodeID string) (string, bool) {
	rest, ok := strings.CutPrefix(nodeID, "booting/")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '/')
	return rest[:max(i, 0)], i > 0
}

// choice is a pool whose template fits a job on k fresh nodes.
type choice struct {
	pool, k int
	cost    int64
}

func (s *scaleUp) handle(j scheduler.Job) {
	if c := s.plannedCluster(); c != nil {
		if p, ok, _ := s.a.sched.Place(c, j); ok && c.Assume(j, p) == nil {
			s.keep(j, p)
			pool := s.nodePool[p.Replicas[0].NodeID]
			s.jobs[pool] = append(s.jobs[pool], j.ID)
			s.credit(pool, j)
			return
		}
	}
	var fits []choice
	for i, p := range s.pools {
		if !p.Scalable {
			continue
		}
		if k, ok := s.fits(i, j); ok {
			fits = append(fits, choice{pool: i, k: k, cost: int64(k) * p.Template.PriceMicros})
		}
	}
	if len(fits) == 0 {
		s.hold("", j, "it fits no node in service and no pool's node template")
		return
	}
	slices.SortStableFunc(fits, func(x, y choice) int { return cmp.Or(cmp.Compare(x.cost, y.cost), cmp.Compare(x.pool, y.pool)) })
	var full []string
	for _, c := range fits {
		p := &s.pools[c.pool]
		if p.Max-len(p.Nodes)-p.Booting-s.added[p.Name] < c.k {
			full = append(full, fmt.Sprintf("%s (%d)", p.Name, p.Max))
			continue
		}
		s.credit(p.Name, j)
		now := s.in.Now
		switch {
		case !p.LastScaleUp.IsZero() && now.Sub(p.LastScaleUp) < s.a.cfg.ScaleUpCooldown:
			s.hold(p.Name, j, fmt.Sprintf("pool %s scaled up %s ago and waits out its cool-down of %s", p.Name,
				now.Sub(p.LastScaleUp).Round(time.Second), s.a.cfg.ScaleUpCooldown))
			return
		case s.added[p.Name]+c.k > s.a.cfg.MaxBatch:
			s.hold(p.Name, j, fmt.Sprintf("this decision already adds %d nodes to pool %s, the most one batch may; the rest wait for the next",
				s.added[p.Name], p.Name))
			return
		}
		hours := s.a.cfg.BudgetHorizon
		cost := int64(float64(c.cost) * hours.Hours())
		if left, ok := s.left[j.Team]; ok && cost > 0 && left < cost {
			s.hold(p.Name, j, fmt.Sprintf("team %s has %s left of its monthly budget, and %d node(s) of pool %s cost %s for %s",
				j.Team, money(max(left, 0)), c.k, p.Name, money(cost), hours))
			return
		}
		if _, ok := s.left[j.Team]; ok {
			s.left[j.Team] -= cost
		}
		s.add(c.pool, c.k, j)
		return
	}
	s.credit(s.pools[fits[0].pool].Name, j)
	s.hold(s.pools[fits[0].pool].Name, j, "every pool whose template fits it is at its maximum: "+strings.Join(full, ", "))
}

// fits reports on how few fresh nodes of pool i the job fits, up to one per replica.
func (s *scaleUp) fits(i int, j scheduler.Job) (int, bool) {
	for k := 1; k <= max(j.Request.Replicas, 1); k++ {
		key := [2]int{i, k}
		c, ok := s.fresh[key]
		if !ok {
			nodes := make([]scheduler.Node, k)
			for n := range k {
				nodes[n] = templateNode(s.pools[i], fmt.Sprintf("fresh/%s/%d", s.pools[i].Name, n))
			}
			var err error
			if c, err = scheduler.NewCluster(scheduler.Snapshot{Now: s.in.Now, Nodes: nodes, Workload: s.workload}, s.a.sched.Config()); err != nil {
				return 0, false
			}
			s.fresh[key] = c
		}
		if _, ok, _ := s.a.sched.Place(c, j); ok {
			return k, true
		}
	}
	return 0, false
}

// add plans k new nodes of pool i and puts the job on them.
func (s *scaleUp) add(i, k int, j scheduler.Job) {
	p := s.pools[i]
	for range k {
		id := fmt.Sprintf("new/%s/%d", p.Name, len(s.planned))
		s.planned = append(s.planned, templateNode(p, id))
		s.nodePool[id] = p.Name
	}
	s.added[p.Name] += k
	s.jobs[p.Name] = append(s.jobs[p.Name], j.ID)
	s.cluster = nil
	if c := s.plannedCluster(); c != nil {
		if pl, ok, _ := s.a.sched.Place(c, j); ok && c.Assume(j, pl) == nil {
			s.keep(j, pl)
		}
	}
}

// keep remembers a placement on planned nodes, so the cluster can be rebuilt with it.
func (s *scaleUp) keep(j scheduler.Job, p scheduler.Placement) {
	for _, r := range p.Replicas {
		s.plannedRun = append(s.plannedRun, scheduler.Allocation{Job: j, Replica: r, StartTime: s.in.Now})
	}
}

// plannedCluster is the cluster of the nodes planned so far; nil when there are none.
// Decide checked every template, so the planned nodes always form one.
func (s *scaleUp) plannedCluster() *scheduler.Cluster {
	if s.cluster == nil && len(s.planned) > 0 {
		c, err := scheduler.NewCluster(scheduler.Snapshot{Now: s.in.Now, Nodes: s.planned, Running: s.plannedRun, Workload: s.workload}, s.a.sched.Config())
		if err != nil {
			return nil
		}
		s.cluster = c
	}
	return s.cluster
}

func (s *scaleUp) credit(pool string, j scheduler.Job) {
	d := s.demand[pool]
	d.Jobs++
	milli := int64(j.Request.GPUs) * 1000
	if j.Request.GPUMilli > 0 {
		milli = int64(j.Request.GPUMilli)
	}
	d.GPUMilli += milli * int64(max(j.Request.Replicas, 1))
	s.demand[pool] = d
}

func (s *scaleUp) hold(pool string, j scheduler.Job, reason string) {
	k := [2]string{pool, reason}
	if i, ok := s.heldAt[k]; ok {
		s.held[i].Jobs = append(s.held[i].Jobs, j.ID)
		return
	}
	s.heldAt[k] = len(s.held)
	s.held = append(s.held, Held{Pool: pool, Jobs: []string{j.ID}, Cause: reason})
}

// results turns the search into scale-ups with their reasons.
func (s *scaleUp) results() ([]ScaleUp, []Held, map[string]Demand) {
	var ups []ScaleUp
	for _, p := range s.pools {
		n := s.added[p.Name]
		if n == 0 {
			continue
		}
		jobs := s.jobs[p.Name]
		ups = append(ups, ScaleUp{Pool: p.Name, Nodes: n, Jobs: jobs, Reason: fmt.Sprintf(
			"%s (%s) fit no node in service; pool %s is the cheapest whose template (%s) fits, at %s a node-hour",
			plural(len(jobs), "waiting job"), describe(jobs), p.Name, templateSummary(p.Template), money(p.Template.PriceMicros))})
	}
	for i := range s.held {
		h := &s.held[i]
		h.Reason = fmt.Sprintf("%s (%s) held back: %s", plural(len(h.Jobs), "waiting job"), describe(h.Jobs), h.Cause)
	}
	return ups, s.held, s.demand
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func templateSummary(n scheduler.Node) string {
	s := fmt.Sprintf("%d CPU, %d GiB", n.CPUMilli/1000, n.RAMMiB/1024)
	if len(n.GPUs) > 0 {
		s = fmt.Sprintf("%dx%s, ", len(n.GPUs), n.GPUs[0].Model) + s
	}
	if n.Spot {
		s += ", spot"
	}
	return s
}
