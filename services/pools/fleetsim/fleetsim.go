// Package fleetsim replays a pod trace (creation and deletion times of the Alibaba
// GPU trace) on an elastic fleet, time-stepped, with the production scheduler and the
// production autoscaler (services/pools/autoscale), and measures what the fleet cost,
// how long jobs waited and what spot interruptions did. It is pure: the clock is the
// simulation's, randomness comes from a seed.
//
// Three fleets run on the same trace: a static on-demand fleet sized for the peak
// (every pool at the most nodes the on-demand autoscaler ever ran), autoscaled
// on-demand pools, and autoscaled pools with spot capacity beside on-demand, where jobs
// whose QoS allows it may take spot nodes. A spot node is interrupted with a given
// probability per node-hour; its jobs checkpoint within the notice, are requeued and
// resume elsewhere with their progress, and the machine goes at the notice's end.
package fleetsim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/scheduler/tracebench"
)

// Config holds the simulation's knobs.
type Config struct {
	// Speedup divides the trace's times: 10 replays 149 days in about 15.
	Speedup float64
	// Step is the simulated time between two passes of scheduler and autoscaler.
	Step time.Duration
	// BootTime is how long a new machine takes to join.
	BootTime time.Duration
	// SpotRatio is the spot price as a fraction of on-demand.
	SpotRatio float64
	// InterruptionRate is the chance per spot node-hour that its provider reclaims it.
	InterruptionRate float64
	// Notice is how long a reclaimed spot machine lives after its notice.
	Notice time.Duration
	// SpotQoS lists the trace QoS classes whose jobs allow spot.
	SpotQoS []string
	Seed    int64
	// Autoscale configures the autoscaler; its defaults are production's.
	Autoscale autoscale.Config
	// GPUHour is the on-demand price of an hour of one GPU per model, micro-units;
	// DefaultGPUHour fills models it does not name. CPUCoreHour prices CPU-only nodes.
	GPUHour        map[string]int64
	DefaultGPUHour int64
	CPUCoreHour    int64
}

// DefaultConfig is what `gantry bench fleet` runs unless told otherwise.
func DefaultConfig() Config {
	return Config{
		Speedup: 10, Step: time.Minute, BootTime: 2 * time.Minute, SpotRatio: 0.3, InterruptionRate: 0.05, Notice: 2 * time.Minute,
		SpotQoS: []string{"BE"}, Seed: 42, Autoscale: autoscale.DefaultConfig(),
		// On-demand list prices of comparable cloud GPUs, per GPU-hour; G1–G3 are the
		// trace's undisclosed models, priced as A100-, A100- and H100-class cards.
		GPUHour: map[string]int64{"T4": 526_000, "P100": 1_460_000, "V100M16": 3_060_000, "V100M32": 3_900_000, "A10": 1_006_000,
			"G1": 2_000_000, "G2": 4_100_000, "G3": 6_880_000},
		DefaultGPUHour: 2_000_000,
		CPUCoreHour:    40_000,
	}
}

// Validate names the first knob that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Speedup < 1:
		return fmt.Errorf("speedup %g: want 1 or more", c.Speedup)
	case c.Step <= 0 || c.BootTime < 0 || c.Notice < 0:
		return errors.New("step must be positive, boot time and notice 0 or more")
	case c.SpotRatio <= 0 || c.SpotRatio > 1:
		return fmt.Errorf("spot ratio %g: want more than 0, at most 1", c.SpotRatio)
	case c.InterruptionRate < 0 || c.InterruptionRate*c.Step.Hours() > 1:
		return fmt.Errorf("interruption rate %g per node-hour: want 0 or more, at most one per step", c.InterruptionRate)
	}
	return c.Autoscale.Validate()
}

// Scenario is what one fleet did.
type Scenario struct {
	Name       string  `json:"name"`
	CostMicros int64   `json:"cost_micros"`
	Cost       float64 `json:"cost"`
	// GPUHours are the GPU-hours jobs ran; ProvisionedGPUHours those the fleet paid for.
	GPUHours            float64 `json:"gpu_hours"`
	ProvisionedGPUHours float64 `json:"provisioned_gpu_hours"`
	PeakNodes           int     `json:"peak_nodes"`
	MeanQueueDelayS     float64 `json:"mean_queue_delay_s"`
	P95QueueDelayS      float64 `json:"p95_queue_delay_s"`
	Interruptions       int     `json:"interruptions"`
	// Survived counts interrupted jobs that finished later.
	Survived   int `json:"interruptions_survived"`
	JobsDone   int `json:"jobs_done"`
	JobsLost   int `json:"jobs_lost"`
	ScaleUps   int `json:"scale_ups"`
	ScaleDowns int `json:"scale_downs"`
	// SimulatedHours is how long the simulated clock ran.
	SimulatedHours float64 `json:"simulated_hours"`
}

// Result is the three fleets on one trace.
type Result struct {
	Jobs      int      `json:"jobs"`
	Static    Scenario `json:"static"`
	Autoscale Scenario `json:"autoscale"`
	Spot      Scenario `json:"spot"`
	// SavingsPct is how much less the spot fleet cost than the static one.
	SavingsPct float64 `json:"savings_pct"`
}

// nodeType is one kind of machine of the node list.
type nodeType struct {
	model        string
	gpus         int
	cpu, ram     int64
	count        int
	onDemandHour int64
}

// Run replays pods on the fleets built from the node list's machine types.
func Run(nodes []tracebench.TraceNode, pods []tracebench.TracePod, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if len(pods) == 0 || len(nodes) == 0 {
		return Result{}, errors.New("fleet simulation needs nodes and pods")
	}
	types := machineTypes(nodes, cfg)
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		return Result{}, err
	}
	dec, err := autoscale.New(sched, cfg.Autoscale)
	if err != nil {
		return Result{}, err
	}
	res := Result{Jobs: len(pods)}
	od := poolsOf(types, cfg, false)
	if res.Autoscale, err = simulate("autoscale", od, pods, cfg, sched, dec, nil); err != nil {
		return res, err
	}
	static := make([]int, len(od))
	for i := range od {
		static[i] = od[i].peak
	}
	if res.Static, err = simulate("static", poolsOf(types, cfg, false), pods, cfg, sched, nil, static); err != nil {
		return res, err
	}
	if res.Spot, err = simulate("spot", poolsOf(types, cfg, true), pods, cfg, sched, dec, nil); err != nil {
		return res, err
	}
	if res.Static.CostMicros > 0 {
		res.SavingsPct = math.Round(10000*(1-float64(res.Spot.CostMicros)/float64(res.Static.CostMicros))) / 100
	}
	return res, nil
}

// machineTypes groups the node list by model, GPUs, CPU and memory, priced on demand.
func machineTypes(nodes []tracebench.TraceNode, cfg Config) []nodeType {
	byKey := map[string]*nodeType{}
	var out []*nodeType
	for _, n := range nodes {
		k := fmt.Sprintf("%s/%d/%d/%d", n.Model, n.GPUs, n.CPUMilli, n.MemoryMiB)
		t, ok := byKey[k]
		if !ok {
			t = &nodeType{model: n.Model, gpus: n.GPUs, cpu: n.CPUMilli, ram: n.MemoryMiB}
			rate, ok := cfg.GPUHour[n.Model]
			if !ok {
				rate = cfg.DefaultGPUHour
			}
			t.onDemandHour = int64(n.GPUs) * rate
			if n.GPUs == 0 {
				t.onDemandHour = n.CPUMilli * cfg.CPUCoreHour / 1000
			}
			byKey[k] = t
			out = append(out, t)
		}
		t.count++
	}
	res := make([]nodeType, len(out))
	for i, t := range out {
		res[i] = *t
	}
	slices.SortStableFunc(res, func(a, b nodeType) int { return cmp.Compare(a.onDemandHour, b.onDemandHour) })
	return res
}

// simPool is one pool of a simulated fleet.
type simPool struct {
	name     string
	template scheduler.Node
	spot     bool
	max      int
	peak     int
}

// poolsOf builds an on-demand pool per machine type, and a spot pool beside each when spot is on.
func poolsOf(types []nodeType, cfg Config, spot bool) []*simPool {
	var out []*simPool
	for i, t := range types {
		base := fmt.Sprintf("t%02d-%s-%dg", i, orCPU(t.model), t.gpus)
		mk := func(suffix string, price int64, isSpot bool) *simPool {
			n := scheduler.Node{CPUMilli: t.cpu, RAMMiB: t.ram, ScratchMiB: 1 << 30, Spot: isSpot, PriceMicros: price}
			for g := range t.gpus {
				n.GPUs = append(n.GPUs, scheduler.GPU{Index: g, Model: t.model})
			}
			return &simPool{name: base + suffix, template: n, spot: isSpot, max: t.count}
		}
		out = append(out, mk("-od", t.onDemandHour, false))
		if spot {
			out = append(out, mk("-spot", int64(math.Round(float64(t.onDemandHour)*cfg.SpotRatio)), true))
		}
	}
	return out
}

func orCPU(model string) string {
	if model == "" {
		return "cpu"
	}
	return model
}

// simNode is one machine of a simulated fleet.
type simNode struct {
	id        string
	pool      int
	requested time.Time
	ready     time.Time
	// gone is when a reclaimed machine disappears; zero otherwise.
	gone     time.Time
	lastBusy time.Time
	jobs     int
	removed  bool
}

// simJob is one trace pod as a job.
type simJob struct {
	job       scheduler.Job
	submit    time.Time
	remaining time.Duration
	gpuMilli  int64
	running   bool
	replicas  []scheduler.ReplicaPlacement
	startedAt time.Time
	waitFrom  time.Time
	waited    time.Duration
	ran       time.Duration
	done      bool
	hits      int
}

// simulate runs one fleet: autoscaled with dec, or fixed at static nodes per pool.
func simulate(name string, pools []*simPool, pods []tracebench.TracePod, cfg Config, sched *scheduler.Scheduler, dec *autoscale.Autoscaler, static []int) (Scenario, error) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &sim{name: name, cfg: cfg, sched: sched, dec: dec, pools: pools, rng: rand.New(rand.NewSource(cfg.Seed)), t0: t0, now: t0,
		lastUp: make([]time.Time, len(pools)), nodes: map[string]*simNode{}}
	spotQoS := map[string]bool{}
	for _, q := range cfg.SpotQoS {
		spotQoS[q] = true
	}
	var end time.Time
	for i, p := range pods {
		j := &simJob{submit: t0.Add(scale(p.Created, cfg.Speedup)), remaining: max(scale(p.Deleted-p.Created, cfg.Speedup), time.Second),
			gpuMilli: p.GPUDemand()}
		j.job = scheduler.Job{ID: strconv.Itoa(i), Team: "trace", SubmitTime: j.submit, Request: tracebench.PodRequest(&p)}
		j.job.Request.SpotAllowed = spotQoS[p.QoS]
		j.waitFrom = j.submit
		s.jobs = append(s.jobs, j)
		end = maxTime(end, j.submit.Add(j.remaining))
	}
	slices.SortStableFunc(s.jobs, func(a, b *simJob) int { return a.submit.Compare(b.submit) })
	for i, n := range static {
		for range n {
			s.addNode(i, t0.Add(-cfg.BootTime))
		}
	}
	// Past the trace's end the fleet drains its queue; a week more and what still
	// waits is lost.
	deadline := end.Add(7 * 24 * time.Hour)
	for ; ; s.now = s.now.Add(cfg.Step) {
		s.arrive()
		s.progress()
		s.interrupt()
		s.expire()
		if err := s.schedule(); err != nil {
			return Scenario{}, err
		}
		if dec != nil {
			if err := s.autoscale(); err != nil {
				return Scenario{}, err
			}
		}
		s.track()
		if s.finished() || s.now.After(deadline) {
			break
		}
	}
	return s.report(), nil
}

func scale(seconds int64, speedup float64) time.Duration {
	return time.Duration(float64(seconds) / speedup * float64(time.Second))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
