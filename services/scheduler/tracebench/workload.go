package tracebench

import (
	"math/rand"
	"slices"
	"strings"
)

// Workload is one seeded run's input: the arrival list, the node priority and the
// typical-pod distribution, built exactly as PROTOCOL.md §2–§6 say.
type Workload struct {
	Seed     int64
	Inflate  float64
	Arrivals []TracePod
	// Priority[i] is node i's tie-break rank (lower wins), nodes in input order sorted by name.
	Nodes    []TraceNode
	Priority []int
	Typical  []TypicalPod
	// Trace is W: the trace's pods sorted by name, the population tuning samples from.
	Trace []TracePod
	// CapacityMilli is the cluster's GPU capacity in milli-GPU.
	CapacityMilli int64
	rng           *rand.Rand
}

// TypicalPod is one key of the typical-pod distribution with its normalised weight.
type TypicalPod struct {
	CPUMilli int64
	Milli    int
	Num      int
	Spec     []string
	Weight   float64
}

// typicalCoverage is the popularity threshold: keys are taken until they cover 95% of pods.
const typicalCoverage = 0.95

// BuildWorkload constructs the arrivals for one seed; inflate is the tuning ratio (1.3).
func BuildWorkload(nodes []TraceNode, pods []TracePod, inflate float64, seed int64) *Workload {
	rng := rand.New(rand.NewSource(seed))
	_ = rng.Int63() // §2.1: the simulator spends one draw on a debug line

	w := slices.Clone(pods)
	slices.SortStableFunc(w, func(a, b TracePod) int { return strings.Compare(a.Name, b.Name) })

	arrivals := slices.Clone(w)
	rng.Shuffle(len(arrivals), func(i, j int) { arrivals[i], arrivals[j] = arrivals[j], arrivals[i] })

	var capacity int64
	for _, n := range nodes {
		capacity += int64(n.GPUs) * 1000
	}
	target := int64(inflate * float64(capacity))
	var demand int64
	for _, p := range arrivals {
		demand += p.GPUDemand()
	}
	switch {
	case demand < target:
		for {
			p := w[rng.Intn(len(w))]
			// The stop test adds the per-GPU milli, not num×milli (§3).
			if demand+int64(p.Milli) > target {
				break
			}
			arrivals = append(arrivals, p)
			demand += p.GPUDemand()
		}
	case demand > target:
		for demand > target {
			i := rng.Intn(len(arrivals))
			demand -= arrivals[i].GPUDemand()
			arrivals = slices.Delete(arrivals, i, i+1)
		}
	}

	sorted := slices.Clone(nodes)
	slices.SortStableFunc(sorted, func(a, b TraceNode) int { return strings.Compare(a.Name, b.Name) })
	return &Workload{
		Seed:          seed,
		Inflate:       inflate,
		Arrivals:      arrivals,
		Nodes:         sorted,
		Priority:      rng.Perm(len(sorted)),
		Typical:       TypicalPods(w),
		Trace:         w,
		CapacityMilli: capacity,
		rng:           rng,
	}
}

// TypicalPods returns the most frequent (cpu, milli, num, spec) keys covering 95% of pods,
// with weights renormalised to 1 (§6).
func TypicalPods(pods []TracePod) []TypicalPod {
	type key struct {
		cpu   int64
		milli int
		num   int
		spec  string
	}
	counts := map[key]int{}
	for _, p := range pods {
		counts[key{p.CPUMilli, p.Milli, p.Num, strings.Join(p.Spec, "|")}]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := counts[b] - counts[a]; c != 0 {
			return c
		}
		switch {
		case a.cpu != b.cpu:
			return cmpDesc(a.cpu, b.cpu)
		case a.milli != b.milli:
			return cmpDesc(int64(a.milli), int64(b.milli))
		case a.num != b.num:
			return cmpDesc(int64(a.num), int64(b.num))
		default:
			return -strings.Compare(a.spec, b.spec)
		}
	})
	var out []TypicalPod
	covered, total := 0, 0.0
	for _, k := range keys {
		if float64(covered) >= typicalCoverage*float64(len(pods)) {
			break
		}
		covered += counts[k]
		tp := TypicalPod{CPUMilli: k.cpu, Milli: k.milli, Num: k.num, Weight: float64(counts[k]) / float64(len(pods))}
		if k.spec != "" {
			tp.Spec = strings.Split(k.spec, "|")
		}
		total += tp.Weight
		out = append(out, tp)
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
