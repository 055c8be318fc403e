package scheduler

import (
	"math"
	"math/rand"
	"testing"
)

func TestPatternPrices(t *testing.T) {
	cases := []struct {
		name   string
		sizes  []int
		demand []float64
		want   []float64
	}{
		{"whole cards are worth a card", []int{1000}, []float64{1}, []float64{1}},
		{"halves pair up", []int{500}, []float64{1}, []float64{0.5}},
		// Patterns {1000}, {500 500}, {500 300}, {300 300 300}: every constraint of the
		// dual binds but one, so the prices are unique.
		{"whole, halves and thirds", []int{1000, 500, 300}, []float64{0.4, 0.3, 0.3}, []float64{1, 0.5, 1.0 / 3}},
		// Twice as many 300s as 700s: one card of {700 300} and a third of {300 300 300}.
		{"the scarcer partner is worth the rest of its card", []int{700, 300}, []float64{1, 2}, []float64{2.0 / 3, 1.0 / 3}},
		// 810s fill cards alone: the 160s that share their cards are free riders.
		{"small fillers of large shares cost nothing", []int{810, 160}, []float64{10, 1}, []float64{1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := patternPrices(tc.sizes, tc.demand)
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Fatalf("prices %v, want %v", got, tc.want)
				}
			}
		})
	}
	if patternPrices(nil, nil) != nil {
		t.Fatal("no sizes, yet prices")
	}
}

// TestPatternPricesAreOptimalDuals checks, on random size mixes, what makes the prices
// the LP's optimal dual: no pattern that fits a card is worth more than one card, and
// the demand priced is at least the cards the demand's volume fills (the volume bound
// is itself a feasible dual, so the optimum cannot be below it).
func TestPatternPricesAreOptimalDuals(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		seen := map[int]bool{}
		var sizes []int
		var demand []float64
		for k := 1 + rng.Intn(12); k > 0; k-- {
			s := 10 * (1 + rng.Intn(100))
			if rng.Intn(4) == 0 {
				s = 1 + rng.Intn(1000)
			}
			if seen[s] {
				continue
			}
			seen[s] = true
			sizes = append(sizes, s)
			demand = append(demand, rng.Float64())
		}
		prices := patternPrices(sizes, demand)
		pattern := make([]float64, len(sizes))
		if v := newKnapsack(sizes, 1).best(prices, pattern); v > 1+1e-6 {
			t.Fatalf("sizes %v demand %v: prices %v let pattern %v be worth %v cards", sizes, demand, prices, pattern, v)
		}
		var priced, volume float64
		for i := range sizes {
			if prices[i] < 0 || prices[i] > 1 {
				t.Fatalf("sizes %v: price %v out of [0, 1]", sizes, prices[i])
			}
			priced += demand[i] * prices[i]
			volume += demand[i] * float64(sizes[i]) / 1000
		}
		if priced < volume-1e-6 {
			t.Fatalf("sizes %v demand %v: prices %v value the demand at %v cards, below its volume %v", sizes, demand, prices, priced, volume)
		}
	}
}

func TestCardWorth(t *testing.T) {
	worth := cardWorth([]int{1000, 500, 300}, []float64{1, 0.5, 1.0 / 3})
	cases := []struct {
		free int
		want float64
	}{
		{1000, 1},
		{999, 1}, // three 300s
		{800, 0.5 + 1.0/3},
		{700, 2.0 / 3}, // two 300s beat one 500
		{500, 0.5},
		{299, 0},
		{0, 0},
	}
	for _, tc := range cases {
		if got := worth[tc.free]; math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("worth[%d] = %v, want %v", tc.free, got, tc.want)
		}
	}
}

func TestWorkloadWorthFollowsTheClass(t *testing.T) {
	w := Workload{
		{GPUs: 1, GPUMilli: 500, GPUModels: []string{"T4"}, Weight: 0.5},
		{GPUs: 1, GPUMilli: 1000, GPUMemoryMiB: 40960, Weight: 0.5},
		{GPUs: 0, CPUMilli: 4000, Weight: 0.5},
	}
	if got := workloadWorth(w, gpuClass{"A10", 24576}); got != nil {
		t.Fatalf("an A10 hosts neither the T4 share nor the 40 GiB job, yet worth %v", got[1000])
	}
	if got := workloadWorth(w, gpuClass{"T4", 15360}); got == nil || got[1000] != 1 || got[999] != 0.5 {
		t.Fatalf("a T4 card hosts two halves: worth %v", got)
	}
	if got := workloadWorth(w, gpuClass{"A100", 81920}); got == nil || got[1000] != 1 || got[999] != 0 {
		t.Fatalf("an A100 card hosts the whole-GPU job only: worth %v", got)
	}
}

func TestPatternScorer(t *testing.T) {
	// Prices as in TestPatternPrices: whole 1, 500 a half, 300 a third.
	workload := Workload{
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 4000, Weight: 0.4},
		{GPUs: 1, GPUMilli: 500, CPUMilli: 2000, Weight: 0.3},
		{GPUs: 1, GPUMilli: 300, CPUMilli: 2000, Weight: 0.3},
	}
	node := gpuNode("n", "A10", 3, 24576, 64000, 256<<10)
	share := func(milli, card int) Allocation {
		return Allocation{Job: job("s", Request{GPUs: 1, GPUMilli: milli}), Replica: ReplicaPlacement{NodeID: "n", Devices: []DeviceAssignment{{GPUIndex: card, Milli: milli, MemoryMiB: 1024}}}}
	}
	// Card 0 holds a 500 (500 free), card 1 a 400 (600 free), card 2 is free.
	first, second := share(500, 0), share(400, 1)
	second.Job.ID = "t"
	_, c := newTestCluster(t, Snapshot{Nodes: []Node{node}, Running: []Allocation{first, second}, Workload: workload})
	score := func(milli, card int) float64 {
		n, o := optionOn(c, "n", milli, card)
		return patternScorer{c: c, weight: 10}.score(n, o)
	}
	cases := []struct {
		name  string
		milli int
		card  int
		want  float64
	}{
		{"a 500 completing its half-used card wastes nothing", 500, 0, 0},
		{"a 500 on a free card starts a pattern of two halves", 500, 2, 0},
		{"a 300 on the half-used card strands 200 no request fills", 300, 0, -10 * 1000 * (0.5 - 1.0/3)},
		{"a 300 where two 300s fit leaves room for the other", 300, 1, 0},
		{"a 300 on a free card leaves 700 for two more", 300, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := score(tc.milli, tc.card); math.Abs(got-tc.want) > 1e-6 {
				t.Fatalf("score = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("placement keeps the half-used card for a 500", func(t *testing.T) {
		s, _ := New(DefaultConfig())
		p, ok, ex := s.Place(c, job("third", Request{GPUs: 1, GPUMilli: 300, CPUMilli: 2000}))
		if !ok {
			t.Fatal(ex.Reason)
		}
		if got := p.Replicas[0].Devices[0].GPUIndex; got == 0 {
			t.Fatalf("the 300 took card 0, stranding 200 beside the 500")
		}
	})
}

// BenchmarkPatternPrices prices the most sizes the LP takes, none sharing a divisor, so
// the knapsack runs at single milli-GPU steps: the cost NewCluster pays per card class.
func BenchmarkPatternPrices(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	seen := map[int]bool{}
	var sizes []int
	var demand []float64
	for len(sizes) < patternSizes {
		if s := 1 + rng.Intn(1000); !seen[s] {
			seen[s] = true
			sizes = append(sizes, s)
			demand = append(demand, rng.Float64())
		}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		patternPrices(sizes, demand)
	}
}
