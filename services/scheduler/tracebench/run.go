package tracebench

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
)

// Policy is one placement policy the harness can replay.
type Policy struct {
	Name  string
	start func(w *Workload, c *simCluster) (decider, error)
}

// Policies returns every policy, Gantry's first, in the order reports list them.
func Policies() []Policy {
	scored := func(name string, s scoreFunc, p pickFunc) Policy {
		return Policy{Name: name, start: func(_ *Workload, c *simCluster) (decider, error) {
			return newScoredDecider(c, s, p), nil
		}}
	}
	return []Policy{
		{Name: "gantry", start: startGantry},
		{Name: "random", start: func(w *Workload, c *simCluster) (decider, error) {
			return newRandomDecider(c, w.rng), nil
		}},
		scored("firstfit", scoreFirstFit, pickFirst),
		scored("dotprod", scoreDotProd, pickBest),
		scored("gpuclustering", scoreGPUClustering, pickBest),
		scored("gpupacking", scoreGPUPacking, pickBest),
		scored("bestfit", scoreBestFit, pickBest),
		{Name: "fgd", start: func(_ *Workload, c *simCluster) (decider, error) {
			return newScoredDecider(c, newFGDScore(), pickFGD), nil
		}},
	}
}

// SelectPolicies resolves "all" or a comma-separated list of policy names.
func SelectPolicies(spec string) ([]Policy, error) {
	all := Policies()
	if spec == "" || spec == "all" {
		return all, nil
	}
	var names []string
	for _, p := range all {
		names = append(names, p.Name)
	}
	var out []Policy
	for _, want := range strings.Split(spec, ",") {
		found := false
		for _, p := range all {
			if p.Name == strings.TrimSpace(want) {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("policy %q is unknown; allowed: all, %s", want, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Result is the JSON document `gantry bench trace --format json` prints.
type Result struct {
	Trace    string         `json:"trace"`
	Seeds    []int64        `json:"seeds"`
	Policies []PolicyResult `json:"policies"`
}

// PolicyResult holds one policy's figures, each the mean over the seeds; ratios in percent.
type PolicyResult struct {
	Policy        string  `json:"policy"`
	AllocRatio100 float64 `json:"alloc_ratio_100"`
	AllocRatio130 float64 `json:"alloc_ratio_130"`
	FirstFailPct  float64 `json:"first_fail_pct"`
	FragRate90    float64 `json:"frag_rate_90"`
	// Ceiling is the most any placement could reach that places what this policy placed
	// before its first failed sharing pod (see ceiling.go): how much better packing
	// could still win.
	Ceiling       float64 `json:"ceiling"`
	PodsPerSec    float64 `json:"pods_per_sec"`
	P99DecisionUS float64 `json:"p99_decision_us"`
	// CPUPodsPerSec and P99DecisionCPUUS count only the CPU time of the deciding thread:
	// on a machine shared with other work they show the policy's own cost, where wall
	// time also counts waiting for a CPU. Zero where the platform cannot measure it.
	CPUPodsPerSec    float64 `json:"-"`
	P99DecisionCPUUS float64 `json:"-"`
	// PerSeed lists each seed's allocation ratio at 130%; the JSON keeps the shape.
	PerSeed []float64 `json:"-"`
}

// Run replays every seed under every policy; each seed's workload is shared by all policies.
func Run(trace string, nodes []TraceNode, pods []TracePod, inflate float64, seeds []int64, policies []Policy) (Result, error) {
	if inflate <= 0 || inflate > 10 {
		return Result{}, fmt.Errorf("inflate %.3g is out of range; allowed: (0, 10]", inflate)
	}
	if len(seeds) == 0 {
		return Result{}, fmt.Errorf("seeds: at least one seed is required")
	}
	res := Result{Trace: trace, Seeds: seeds}
	sums := make([]runMetrics, len(policies))
	perSeed := make([][]float64, len(policies))
	for _, seed := range seeds {
		for i, pol := range policies {
			// Each policy gets a freshly built workload so the Random policy's draws
			// continue the seed's stream exactly where §2 says they do.
			w := BuildWorkload(nodes, pods, inflate, seed)
			m, err := replay(w, pol)
			if err != nil {
				return Result{}, fmt.Errorf("policy %s seed %d: %w", pol.Name, seed, err)
			}
			perSeed[i] = append(perSeed[i], m.alloc130)
			sums[i].alloc100 += m.alloc100
			sums[i].alloc130 += m.alloc130
			sums[i].fragRate90 += m.fragRate90
			sums[i].firstFailPct += m.firstFailPct
			sums[i].ceiling += m.ceiling
			sums[i].decisions += m.decisions
			sums[i].decisionNanos += m.decisionNanos
			sums[i].p99Nanos += m.p99Nanos
			sums[i].cpuNanos += m.cpuNanos
			sums[i].p99CPUNanos += m.p99CPUNanos
		}
	}
	k := float64(len(seeds))
	for i, pol := range policies {
		s := sums[i]
		pr := PolicyResult{
			Policy:        pol.Name,
			AllocRatio100: s.alloc100 / k,
			AllocRatio130: s.alloc130 / k,
			FirstFailPct:  s.firstFailPct / k,
			FragRate90:    s.fragRate90 / k,
			Ceiling:       s.ceiling / k,
			P99DecisionUS: float64(s.p99Nanos) / k / 1e3,
			PerSeed:       perSeed[i],
		}
		if s.decisionNanos > 0 {
			pr.PodsPerSec = float64(s.decisions) / (float64(s.decisionNanos) / 1e9)
		}
		if s.cpuNanos > 0 {
			pr.CPUPodsPerSec = float64(s.decisions) / (float64(s.cpuNanos) / 1e9)
			pr.P99DecisionCPUUS = float64(s.p99CPUNanos) / k / 1e3
		}
		res.Policies = append(res.Policies, pr)
	}
	return res, nil
}

// replay runs one policy over one workload and computes its metrics. It keeps to one OS
// thread so that the thread's CPU time is the decisions' own.
func replay(w *Workload, pol Policy) (runMetrics, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := newSimCluster(w)
	decide, err := pol.start(w, c)
	if err != nil {
		return runMetrics{}, err
	}
	var gpus int64
	for _, n := range c.nodes {
		gpus += int64(len(n.left))
	}
	events := make([]event, 0, len(w.Arrivals))
	durations := make([]int64, 0, len(w.Arrivals))
	cpu := make([]int64, 0, len(w.Arrivals))
	var arrived int64
	firstFail := math.NaN()
	placed := make([]bool, len(w.Arrivals))
	for i := range w.Arrivals {
		p := &w.Arrivals[i]
		arrived += p.GPUDemand()
		t0 := time.Now()
		u0, cpuOK := threadCPU()
		node, chosen, ok := decide(p)
		u1, _ := threadCPU()
		durations = append(durations, time.Since(t0).Nanoseconds())
		if cpuOK {
			cpu = append(cpu, int64(u1-u0))
		}
		if ok {
			if err := c.bind(node, chosen, p); err != nil {
				return runMetrics{}, err
			}
			placed[i] = true
		} else {
			if math.IsNaN(firstFail) {
				firstFail = 100 * float64(arrived) / float64(w.CapacityMilli)
			}
			if err := checkNoneFeasible(c, p); err != nil {
				return runMetrics{}, err
			}
		}
		events = append(events, event{arrived: arrived, used: c.used, fragSum: c.fragSum})
	}
	alloc, fragRate := binned(events, gpus, w.CapacityMilli)
	m := runMetrics{
		alloc100:     alloc(100),
		alloc130:     alloc(int(math.Round(w.Inflate * 100))),
		fragRate90:   fragRate(90),
		firstFailPct: firstFail,
		ceiling:      ceiling(w.Arrivals, placed, w.CapacityMilli),
		decisions:    len(durations),
		p99Nanos:     percentile99(durations),
	}
	if math.IsNaN(firstFail) {
		m.firstFailPct = 100 * float64(arrived) / float64(w.CapacityMilli)
	}
	for _, d := range durations {
		m.decisionNanos += d
	}
	if len(cpu) == len(durations) {
		for _, d := range cpu {
			m.cpuNanos += d
		}
		m.p99CPUNanos = percentile99(cpu)
	}
	return m, nil
}

// checkNoneFeasible enforces the rule that a pod may fail only when no node can take it.
func checkNoneFeasible(c *simCluster, p *TracePod) error {
	for i := range c.nodes {
		if c.feasible(&c.nodes[i], p) {
			return fmt.Errorf("pod %s refused although node %s fits it", p.Name, c.nodes[i].name)
		}
	}
	return nil
}
