// Package autoscale decides when node pools grow and shrink. It is pure, like the
// scheduler it asks: pools, the cluster snapshot, budgets and the time go in;
// decisions with their reasons come out. services/pools gives them effect, and
// `gantry bench fleet` replays a trace through the same decisions.
//
// Scale-up follows Kubernetes' cluster-autoscaler: the scheduler runs a full cycle on
// the nodes in service plus those still booting; for each job it leaves waiting (not
// for quota, nor one a preemption makes room for), in priority order, the scheduler is
// asked whether the job fits on nodes planned earlier in this decision, else on fresh
// hypothetical nodes of each pool's template. The cheapest pool that fits wins (spot
// pools only for jobs that allow spot: the scheduler refuses them otherwise); a pool at
// its maximum passes the job to the next cheapest, while a pool in its cool-down, at
// the batch limit, or a team over its budget holds the job back, with the reason.
// Nodes below a pool's minimum are added too.
//
// Scale-down: a node of a scalable pool idle for its pool's idle timeout goes, oldest
// idle first, while the pool stays at or above its minimum, unless the pool grew
// within ScaleDownDelay or grows in this very decision.
package autoscale

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/services/scheduler"
)

// Config holds the autoscaler's tunables.
type Config struct {
	// ScaleUpCooldown is how long after a scale-up a pool waits before the next one,
	// so that booting nodes are counted before more are asked for.
	ScaleUpCooldown time.Duration
	// ScaleDownDelay is how long after a scale-up a pool removes no node.
	ScaleDownDelay time.Duration
	// IdleTimeout is the default time a node may have no work before it goes.
	IdleTimeout time.Duration
	// MaxBatch bounds the nodes one decision adds to one pool.
	MaxBatch int
	// BudgetHorizon is how many hours of a new node are held against the budget of
	// the team whose job asked for it.
	BudgetHorizon time.Duration
}

// DefaultConfig is what `gantry serve` runs unless told otherwise.
func DefaultConfig() Config {
	return Config{ScaleUpCooldown: time.Minute, ScaleDownDelay: 10 * time.Minute, IdleTimeout: 10 * time.Minute,
		MaxBatch: 20, BudgetHorizon: time.Hour}
}

// Validate refuses settings that cannot work.
func (c Config) Validate() error {
	if c.ScaleUpCooldown < 0 || c.ScaleDownDelay < 0 || c.IdleTimeout <= 0 || c.MaxBatch <= 0 || c.BudgetHorizon <= 0 {
		return errors.New("autoscale: cool-downs must be 0 or more; idle timeout, batch and budget horizon positive")
	}
	return nil
}

// Pool is one node pool as the autoscaler sees it.
type Pool struct {
	Name string
	// Template is a node of the pool's template: pool, labels, spot flag, price and
	// resources as the scheduler reads them (its ID is replaced).
	Template scheduler.Node
	Min, Max int
	// Scalable is false for pools whose nodes join by hand.
	Scalable bool
	// Nodes are the pool's nodes in service (ready, cordoned or draining).
	Nodes []Node
	// Booting counts machines asked for whose agent has not joined yet.
	Booting     int
	LastScaleUp time.Time
	// IdleTimeout overrides Config.IdleTimeout when positive.
	IdleTimeout time.Duration
}

// Node is a node of a pool.
type Node struct {
	ID string
	// IdleSince is when the node last had work; zero while it has some.
	IdleSince time.Time
	// Retiring is set once a scale-down chose the node.
	Retiring bool
}

// Input is everything a decision reads.
type Input struct {
	Now time.Time
	// Snapshot is the scheduler's input as dispatch builds it: the nodes in service,
	// what runs on them, and the queue.
	Snapshot scheduler.Snapshot
	Pools    []Pool
	// Budgets maps a team to the micro-units its budget has left this month; a team
	// without a budget is absent.
	Budgets map[string]int64
}

// Decision is what to do, each part with its reason in words.
type Decision struct {
	ScaleUps   []ScaleUp
	ScaleDowns []ScaleDown
	Held       []Held
	// Demand is, per pool, the waiting jobs this decision sent (or would have sent) there.
	Demand map[string]Demand
}

// ScaleUp adds nodes to a pool.
type ScaleUp struct {
	Pool   string
	Nodes  int
	Jobs   []string
	Reason string
}

// ScaleDown removes one idle node.
type ScaleDown struct {
	Pool   string
	Node   string
	Reason string
}

// Held is demand a pool would serve but may not now.
type Held struct {
	Pool string // empty when no pool's template fits the jobs
	Jobs []string
	// Cause is why, alone; Reason names the jobs too.
	Cause  string
	Reason string
}

// Demand is waiting work.
type Demand struct {
	Jobs     int
	GPUMilli int64
}

// Autoscaler decides; it holds only its configuration and the scheduler it asks.
type Autoscaler struct {
	sched *scheduler.Scheduler
	cfg   Config
}

// New returns an autoscaler that asks sched.
func New(sched *scheduler.Scheduler, cfg Config) (*Autoscaler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Autoscaler{sched: sched, cfg: cfg}, nil
}

// Decide makes one decision.
func (a *Autoscaler) Decide(in Input) (Decision, error) {
	d := Decision{Demand: map[string]Demand{}}
	pools := slices.Clone(in.Pools)
	// Cheapest first; equal prices by name, so that decisions do not depend on input order.
	slices.SortStableFunc(pools, func(x, y Pool) int {
		return cmp.Or(cmp.Compare(x.Template.PriceMicros, y.Template.PriceMicros), cmp.Compare(x.Name, y.Name))
	})
	for _, p := range pools {
		if _, err := scheduler.NewCluster(scheduler.Snapshot{Now: in.Now, Nodes: []scheduler.Node{templateNode(p, "template")}}, a.sched.Config()); err != nil {
			return d, fmt.Errorf("autoscale: pool %s: template: %w", p.Name, err)
		}
	}
	snap := in.Snapshot
	snap.Now = in.Now
	snap.Nodes = slices.Clone(snap.Nodes)
	for _, p := range pools {
		for i := range p.Booting {
			snap.Nodes = append(snap.Nodes, templateNode(p, fmt.Sprintf("booting/%s/%d", p.Name, i)))
		}
	}
	if len(snap.Workload) == 0 {
		reqs := make([]scheduler.Request, 0, len(snap.Pending)+len(snap.Running))
		for _, j := range snap.Pending {
			reqs = append(reqs, j.Request)
		}
		for _, r := range snap.Running {
			reqs = append(reqs, r.Job.Request)
		}
		snap.Workload = scheduler.WorkloadFromRequests(reqs)
	}
	busy := map[string]bool{}
	if len(snap.Pending) > 0 {
		plan, err := a.sched.Schedule(snap)
		if err != nil {
			return d, fmt.Errorf("autoscale: %w", err)
		}
		for _, p := range plan.Placements {
			for _, r := range p.Replicas {
				busy[r.NodeID] = true
			}
		}
		up := newScaleUp(a, in, pools, snap.Workload)
		up.run(plan, snap.Pending)
		d.ScaleUps, d.Held, d.Demand = up.results()
	}
	for _, p := range pools {
		if !p.Scalable {
			continue
		}
		have := len(p.Nodes) + p.Booting + d.nodesFor(p.Name)
		if have < p.Min {
			d.addScaleUp(p.Name, p.Min-have, fmt.Sprintf("pool %s has %d nodes, below its minimum of %d", p.Name, have, p.Min))
		}
	}
	d.ScaleDowns = a.scaleDowns(in.Now, pools, busy, d)
	return d, nil
}

func (d *Decision) nodesFor(pool string) int {
	n := 0
	for _, u := range d.ScaleUps {
		if u.Pool == pool {
			n += u.Nodes
		}
	}
	return n
}

func (d *Decision) addScaleUp(pool string, n int, reason string) {
	for i := range d.ScaleUps {
		if d.ScaleUps[i].Pool == pool {
			d.ScaleUps[i].Nodes += n
			d.ScaleUps[i].Reason += "; " + reason
			return
		}
	}
	d.ScaleUps = append(d.ScaleUps, ScaleUp{Pool: pool, Nodes: n, Reason: reason})
}

// templateNode is a node of the pool's template under id.
func templateNode(p Pool, id string) scheduler.Node {
	n := p.Template
	n.ID = id
	n.Pool = p.Name
	n.Cordoned = false
	n.GPUs = slices.Clone(n.GPUs)
	for i := range n.GPUs {
		n.GPUs[i].UUID = fmt.Sprintf("%s/gpu%d", id, n.GPUs[i].Index)
		n.GPUs[i].MIG = slices.Clone(n.GPUs[i].MIG)
		for k := range n.GPUs[i].MIG {
			n.GPUs[i].MIG[k].ID = fmt.Sprintf("%s/gpu%d/mig%d", id, n.GPUs[i].Index, k)
		}
	}
	return n
}

// scaleDowns picks the idle nodes that go.
func (a *Autoscaler) scaleDowns(now time.Time, pools []Pool, busy map[string]bool, d Decision) []ScaleDown {
	var out []ScaleDown
	for _, p := range pools {
		if !p.Scalable || d.nodesFor(p.Name) > 0 || (!p.LastScaleUp.IsZero() && now.Sub(p.LastScaleUp) < a.cfg.ScaleDownDelay) {
			continue
		}
		timeout := a.cfg.IdleTimeout
		if p.IdleTimeout > 0 {
			timeout = p.IdleTimeout
		}
		staying := len(p.Nodes) + p.Booting
		var idle []Node
		for _, n := range p.Nodes {
			if n.Retiring {
				staying--
				continue
			}
			if !n.IdleSince.IsZero() && now.Sub(n.IdleSince) >= timeout && !busy[n.ID] {
				idle = append(idle, n)
			}
		}
		slices.SortStableFunc(idle, func(x, y Node) int { return cmp.Or(x.IdleSince.Compare(y.IdleSince), cmp.Compare(x.ID, y.ID)) })
		for _, n := range idle {
			if staying <= p.Min {
				break
			}
			staying--
			out = append(out, ScaleDown{Pool: p.Name, Node: n.ID, Reason: fmt.Sprintf("node %s had no work for %s (pool %s scales down after %s; %d nodes stay, minimum %d)",
				n.ID, now.Sub(n.IdleSince).Round(time.Second), p.Name, timeout, staying, p.Min)})
		}
	}
	return out
}

// describe lists job ids for a reason, the first few by name.
func describe(jobs []string) string {
	if len(jobs) <= 5 {
		return strings.Join(jobs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(jobs[:5], ", "), len(jobs)-5)
}

// money formats micro-units for a reason.
func money(micros int64) string {
	cents := (micros + 5_000) / 10_000
	return fmt.Sprintf("%d.%02d", cents/100, cents%100)
}
