package fleetsim

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
)

// sim is one fleet's run.
type sim struct {
	name     string
	cfg      Config
	sched    *scheduler.Scheduler
	dec      *autoscale.Autoscaler
	pools    []*simPool
	rng      *rand.Rand
	t0, now  time.Time
	jobs     []*simJob
	next     int // jobs[next:] have not arrived
	queue    []*simJob
	running  map[*simJob]bool
	nodes    map[string]*simNode
	order    []*simNode // every node ever, in creation order
	lastUp   []time.Time
	workload scheduler.Workload
	seq      int
	// tallies
	peak, interruptions, ups, downs int
}

func (s *sim) addNode(pool int, requested time.Time) *simNode {
	s.seq++
	n := &simNode{id: "n" + strconv.Itoa(s.seq), pool: pool, requested: requested, ready: requested.Add(s.cfg.BootTime), lastBusy: requested.Add(s.cfg.BootTime)}
	s.nodes[n.id] = n
	s.order = append(s.order, n)
	return n
}

// inService reports whether n takes work now.
func (s *sim) inService(n *simNode) bool {
	return !n.removed && n.gone.IsZero() && !n.ready.After(s.now)
}

func (s *sim) arrive() {
	if s.running == nil {
		s.running = map[*simJob]bool{}
		reqs := make([]scheduler.Request, len(s.jobs))
		for i, j := range s.jobs {
			reqs[i] = j.job.Request
		}
		s.workload = scheduler.WorkloadFromRequests(reqs)
	}
	for s.next < len(s.jobs) && !s.jobs[s.next].submit.After(s.now) {
		s.queue = append(s.queue, s.jobs[s.next])
		s.next++
	}
}

// progress advances running jobs by one step and ends those that are done.
func (s *sim) progress() {
	for _, j := range s.sortedRunning() {
		step := min(s.cfg.Step, j.remaining)
		j.remaining -= step
		j.ran += step
		if j.remaining <= 0 {
			j.done = true
			s.stop(j)
		}
	}
}

func (s *sim) sortedRunning() []*simJob {
	out := make([]*simJob, 0, len(s.running))
	for j := range s.running {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *simJob) int { return compareID(a.job.ID, b.job.ID) })
	return out
}

func compareID(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x - y
}

// stop takes a job off its nodes.
func (s *sim) stop(j *simJob) {
	for _, r := range j.replicas {
		n := s.nodes[r.NodeID]
		n.jobs--
		if n.jobs == 0 {
			n.lastBusy = s.now
		}
	}
	j.replicas, j.running = nil, false
	delete(s.running, j)
}

// interrupt reclaims spot nodes at the configured rate: their jobs checkpoint and go
// back to the queue with their progress, the machine goes at the notice's end.
func (s *sim) interrupt() {
	p := s.cfg.InterruptionRate * s.cfg.Step.Hours()
	for _, n := range s.order {
		if !s.pools[n.pool].spot || !s.inService(n) || s.rng.Float64() >= p {
			continue
		}
		n.gone = s.now.Add(s.cfg.Notice)
		for _, j := range s.sortedRunning() {
			if slices.ContainsFunc(j.replicas, func(r scheduler.ReplicaPlacement) bool { return r.NodeID == n.id }) {
				s.stop(j)
				j.hits++
				j.waitFrom = s.now
				s.queue = append(s.queue, j)
				s.interruptions++
			}
		}
	}
}

// expire removes reclaimed machines whose notice ran out.
func (s *sim) expire() {
	for _, n := range s.order {
		if !n.removed && !n.gone.IsZero() && !n.gone.After(s.now) {
			n.removed = true
		}
	}
}

// snapshot is the cluster as dispatch would hand it to the scheduler now.
func (s *sim) snapshot() scheduler.Snapshot {
	snap := scheduler.Snapshot{Now: s.now, Workload: s.workload}
	for _, n := range s.order {
		if s.inService(n) {
			node := s.pools[n.pool].template
			node.ID, node.Pool = n.id, s.pools[n.pool].name
			snap.Nodes = append(snap.Nodes, node)
		}
	}
	for _, j := range s.sortedRunning() {
		for _, r := range j.replicas {
			snap.Running = append(snap.Running, scheduler.Allocation{Job: j.job, Replica: r, StartTime: j.startedAt})
		}
	}
	for _, j := range s.queue {
		snap.Pending = append(snap.Pending, j.job)
	}
	return snap
}

// schedule runs one scheduler cycle and starts what it places.
func (s *sim) schedule() error {
	if len(s.queue) == 0 {
		return nil
	}
	plan, err := s.sched.Schedule(s.snapshot())
	if err != nil {
		return fmt.Errorf("%s fleet at %s: %w", s.name, s.now.Sub(s.t0), err)
	}
	placed := map[string]scheduler.Placement{}
	for _, p := range plan.Placements {
		placed[p.JobID] = p
	}
	rest := s.queue[:0]
	for _, j := range s.queue {
		p, ok := placed[j.job.ID]
		if !ok {
			rest = append(rest, j)
			continue
		}
		j.running, j.replicas, j.startedAt = true, p.Replicas, s.now
		j.waited += s.now.Sub(j.waitFrom)
		for _, r := range p.Replicas {
			s.nodes[r.NodeID].jobs++
		}
		s.running[j] = true
	}
	s.queue = rest
	return nil
}

// autoscale asks the production autoscaler and does what it decides.
func (s *sim) autoscale() error {
	in := autoscale.Input{Now: s.now, Snapshot: s.snapshot()}
	for i, p := range s.pools {
		ap := autoscale.Pool{Name: p.name, Template: p.template, Max: p.max, Scalable: true, LastScaleUp: s.lastUp[i]}
		ap.Template.Pool = p.name
		for _, n := range s.order {
			switch {
			case n.pool != i || n.removed || !n.gone.IsZero():
			case n.ready.After(s.now):
				ap.Booting++
			default:
				an := autoscale.Node{ID: n.id}
				if n.jobs == 0 {
					an.IdleSince = n.lastBusy
				}
				ap.Nodes = append(ap.Nodes, an)
			}
		}
		in.Pools = append(in.Pools, ap)
	}
	d, err := s.dec.Decide(in)
	if err != nil {
		return fmt.Errorf("%s fleet at %s: %w", s.name, s.now.Sub(s.t0), err)
	}
	index := map[string]int{}
	for i, p := range s.pools {
		index[p.name] = i
	}
	for _, u := range d.ScaleUps {
		i := index[u.Pool]
		for range u.Nodes {
			s.addNode(i, s.now)
		}
		s.lastUp[i] = s.now
		s.ups++
	}
	for _, down := range d.ScaleDowns {
		if n := s.nodes[down.Node]; n != nil && n.jobs == 0 {
			n.removed, n.gone = true, s.now
			s.downs++
		}
	}
	return nil
}

// track keeps each pool's and the fleet's largest node count.
func (s *sim) track() {
	counts := make([]int, len(s.pools))
	total := 0
	for _, n := range s.order {
		if !n.removed {
			counts[n.pool]++
			total++
		}
	}
	for i, c := range counts {
		s.pools[i].peak = max(s.pools[i].peak, c)
	}
	s.peak = max(s.peak, total)
}

func (s *sim) finished() bool {
	return s.next == len(s.jobs) && len(s.running) == 0 && len(s.queue) == 0
}

// report adds up cost, GPU-hours and waits.
func (s *sim) report() Scenario {
	r := Scenario{Name: s.name, PeakNodes: s.peak, Interruptions: s.interruptions, ScaleUps: s.ups, ScaleDowns: s.downs,
		SimulatedHours: s.now.Sub(s.t0).Hours()}
	var cost float64
	for _, n := range s.order {
		until := s.now
		if !n.gone.IsZero() && n.gone.Before(until) {
			until = n.gone
		}
		from := maxTime(n.requested, s.t0)
		hours := until.Sub(from).Hours()
		if hours <= 0 {
			continue
		}
		p := s.pools[n.pool]
		cost += hours * float64(p.template.PriceMicros)
		r.ProvisionedGPUHours += hours * float64(len(p.template.GPUs))
	}
	r.CostMicros = int64(math.Round(cost))
	r.Cost = math.Round(cost/1e4) / 100
	var waits []float64
	var sum float64
	for _, j := range s.jobs {
		r.GPUHours += j.ran.Hours() * float64(j.gpuMilli) / 1000
		if !j.done {
			r.JobsLost++
			continue
		}
		r.JobsDone++
		r.Survived += j.hits
		w := j.waited.Seconds()
		waits = append(waits, w)
		sum += w
	}
	r.GPUHours = math.Round(r.GPUHours*100) / 100
	r.ProvisionedGPUHours = math.Round(r.ProvisionedGPUHours*100) / 100
	if len(waits) > 0 {
		slices.Sort(waits)
		r.MeanQueueDelayS = math.Round(sum/float64(len(waits))*10) / 10
		r.P95QueueDelayS = waits[int(math.Ceil(0.95*float64(len(waits))))-1]
	}
	return r
}
