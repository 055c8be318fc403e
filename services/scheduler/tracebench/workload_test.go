package tracebench

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func synthetic() ([]TraceNode, []TracePod) {
	nodes := []TraceNode{{"n2", 64000, 1 << 18, 4, "A"}, {"n1", 64000, 1 << 18, 4, "B"}}
	var pods []TracePod
	for i := 0; i < 6; i++ {
		pods = append(pods, TracePod{Name: "p" + string(rune('a'+i)), CPUMilli: 4000, Num: 1, Milli: 1000})
	}
	pods = append(pods, TracePod{Name: "q", CPUMilli: 1000, Num: 1, Milli: 500}, TracePod{Name: "r", CPUMilli: 2000})
	return nodes, pods
}

func TestBuildWorkload(t *testing.T) {
	nodes, pods := synthetic()
	w := BuildWorkload(nodes, pods, 1.3, 42)
	if again := BuildWorkload(nodes, pods, 1.3, 42); !slices.EqualFunc(again.Arrivals, w.Arrivals, func(a, b TracePod) bool { return a.Name == b.Name }) {
		t.Fatal("the same seed built different arrivals")
	}
	// The first |W| arrivals are a permutation of W; the rest are samples appended after.
	names := func(ps []TracePod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(w.Arrivals[:len(pods)]), names(pods)) {
		t.Fatalf("arrival prefix %v is not a permutation of the trace", names(w.Arrivals[:len(pods)]))
	}
	var demand int64
	for _, p := range w.Arrivals {
		demand += p.GPUDemand()
	}
	target := int64(1.3 * 8000)
	if demand > target || demand+1000 <= target {
		t.Fatalf("tuned demand %d, want within one GPU below %d", demand, target)
	}
	if !slices.IsSortedFunc(w.Nodes, func(a, b TraceNode) int { return strings.Compare(a.Name, b.Name) }) || len(w.Priority) != 2 {
		t.Fatalf("nodes %v priority %v", w.Nodes, w.Priority)
	}
	t.Run("inflation below the trace's demand trims it", func(t *testing.T) {
		w := BuildWorkload(nodes, pods, 0.5, 7)
		var d int64
		for _, p := range w.Arrivals {
			d += p.GPUDemand()
		}
		if d > 4000 || len(w.Arrivals) >= len(pods) {
			t.Fatalf("demand %d over %d arrivals", d, len(w.Arrivals))
		}
	})
}

func TestTypicalPods(t *testing.T) {
	_, pods := synthetic()
	typ := TypicalPods(pods)
	// 6 whole-GPU pods (75%), then two singletons tied at one pod each, larger CPU first;
	// only all three keys reach 95%.
	if len(typ) != 3 || typ[0].Milli != 1000 || typ[1].CPUMilli != 2000 || typ[2].Milli != 500 {
		t.Fatalf("typical = %+v", typ)
	}
	var sum float64
	for _, p := range typ {
		sum += p.Weight
	}
	if math.Abs(sum-1) > 1e-12 || math.Abs(typ[0].Weight-0.75) > 1e-12 {
		t.Fatalf("weights %+v", typ)
	}
}

func TestTypicalPodsOfTheDefaultTrace(t *testing.T) {
	nodes, pods := loadTrace(t, "default")
	w := BuildWorkload(nodes, pods, 1.3, 42)
	var cpuOnly float64
	for _, p := range w.Typical {
		if p.Milli == 0 {
			cpuOnly += p.Weight
		}
	}
	// PROTOCOL.md §6: 35 keys, CPU-only keys carry 13.6% of the weight.
	if len(w.Typical) != 35 || math.Abs(cpuOnly-0.136) > 0.001 {
		t.Fatalf("%d typical keys, CPU-only weight %.4f; want 35 and 0.136", len(w.Typical), cpuOnly)
	}
	if n := len(w.Arrivals); n < 10700 || n > 11000 {
		t.Fatalf("%d arrivals; the protocol's seeds give 10,771–10,945", n)
	}
}
