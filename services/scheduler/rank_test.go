package scheduler

import (
	"math"
	"testing"
)

// optionOn builds the option that puts the request on the given cards of a node.
func optionOn(c *Cluster, node string, milli int, cards ...int) (*nodeState, *option) {
	ni := c.byID[node]
	n := &c.nodes[ni]
	o := &option{node: ni, n: len(cards), slice: -1, milli: milli}
	for k, idx := range cards {
		o.cards[k] = int8(n.gpuPos(idx))
	}
	return n, o
}

func TestPackingScorer(t *testing.T) {
	workload := Workload{
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 8000, Weight: 0.5},
		{GPUs: 1, GPUMilli: 500, CPUMilli: 4000, Weight: 0.5},
	}
	// "half" holds a 500 share on card 0; "fresh" is empty with 16 cores per card;
	// "rich" has twice the CPU.
	half := gpuNode("half", "A10", 2, 24576, 32000, 256<<10)
	fresh := gpuNode("fresh", "A10", 2, 24576, 32000, 256<<10)
	rich := gpuNode("rich", "A10", 2, 24576, 64000, 256<<10)
	running := []Allocation{{Job: job("s", Request{GPUs: 1, GPUMilli: 500}), Replica: ReplicaPlacement{NodeID: "half", Devices: []DeviceAssignment{{GPUIndex: 0, Milli: 500, MemoryMiB: 12288}}}}}
	_, c := newTestCluster(t, Snapshot{Nodes: []Node{half, fresh, rich}, Running: running, Workload: workload})

	score := func(node string, cpu int64, milli int, cards ...int) float64 {
		n, o := optionOn(c, node, milli, cards...)
		return packingScorer{c: c, cpu: cpu}.score(n, o)
	}
	cases := []struct {
		name          string
		better, worse float64
	}{
		{"a share completes the half-used card rather than break a free one", score("half", 4000, 500, 0), score("half", 4000, 500, 1)},
		{"a share goes to the half-used node rather than a fresh node", score("half", 4000, 500, 0), score("fresh", 4000, 500, 0)},
		{"a CPU-heavy GPU job goes where it strands no card", score("rich", 28000, 1000, 0), score("fresh", 28000, 1000, 0)},
		{"a CPU-only job takes spare CPU, not CPU the GPUs need", score("rich", 20000, 0), score("fresh", 20000, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !(tc.better > tc.worse) {
				t.Fatalf("score %.1f should beat %.1f", tc.better, tc.worse)
			}
		})
	}
	t.Run("memoised score equals the computed delta", func(t *testing.T) {
		n, o := optionOn(c, "half", 500, 1)
		s := packingScorer{c: c, cpu: 4000}
		first := s.score(n, o)
		if again := s.score(n, o); again != first || first != s.delta(n, o) {
			t.Fatalf("memo %v, again %v, delta %v", first, again, s.delta(n, o))
		}
	})
}

func TestPackingCost(t *testing.T) {
	classes := []gpuClass{{"A10", 24576}, {"T4", 15360}}
	// One node of each class, both able to host every shape: no shape is scarcer than another.
	nodes := []nodeState{
		{node: Node{CPUMilli: 64000}, gpus: []gpuState{{class: 0}, {class: 0}}},
		{node: Node{CPUMilli: 64000}, gpus: []gpuState{{class: 0}, {class: 1}}},
	}
	p := newPacking(Workload{
		{GPUs: 0, CPUMilli: 4000, Weight: 0.2},
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 10000, GPUModels: []string{"A10"}, Weight: 0.4},
		{GPUs: 1, GPUMilli: 400, CPUMilli: 2000, Weight: 0.4},
	}, classes, nodes, 2)
	card := func(class, free int) gpuState { return gpuState{class: class, freeMilli: free} }
	cost := func(cpu int64, cards ...gpuState) float64 {
		copies := make([]int64, len(p.groups))
		p.copiesOf(cards, copies)
		var idle int64
		for _, g := range cards {
			idle += int64(g.freeMilli)
		}
		return p.cost(idle, cpu, copies)
	}
	// Mean CPU per milli-GPU: (0.4·10000 + 0.4·2000) / (0.4·1000 + 0.4·400) = 8.571…
	cases := []struct {
		name  string
		cpu   int64
		cards []gpuState
		want  float64
	}{
		{"no idle GPU costs nothing", 0, []gpuState{card(0, 0)}, 0},
		{"free A10 with ample CPU: only CPU-only jobs and the share's 200 leftover", 40000, []gpuState{card(0, 1000)}, 0.2*1000 + 0.4*200},
		{"T4 is out of reach for the A10-only shape", 40000, []gpuState{card(1, 1000)}, 0.2*1000 + 0.4*1000 + 0.4*200},
		{"300 left fits no shape", 40000, []gpuState{card(0, 300)}, 300},
		{"CPU for one whole GPU of two strands the other", 10000, []gpuState{card(0, 1000), card(0, 1000)},
			0.2*2000 + 0.4*1000 + 0.4*(2000-1600) + 2*(2000-10000/(4800.0/560))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cost(tc.cpu, tc.cards...); math.Abs(got-tc.want) > 1e-6 {
				t.Fatalf("cost = %.4f, want %.4f", got, tc.want)
			}
		})
	}
}

func TestBonusScorers(t *testing.T) {
	h100 := nvlinkPairs(gpuNode("h100", "H100", 4, 81920, 64000, 512<<10))
	a100 := gpuNode("a100", "A100", 2, 81920, 64000, 512<<10)
	a40g := gpuNode("a100-40", "A100", 2, 40960, 64000, 512<<10)
	t4 := gpuNode("t4", "T4", 2, 15360, 64000, 512<<10)
	t4.Spot = true
	_, c := newTestCluster(t, Snapshot{Nodes: []Node{h100, a100, a40g, t4}})
	kinds := DefaultConfig().KindModels[KindInference]
	steer := map[string]bool{}
	for _, m := range kinds {
		steer[m] = true
	}
	on := func(node string, milli int, cards ...int) (*nodeState, *option) {
		return optionOn(c, node, milli, cards...)
	}
	cases := []struct {
		name string
		s    scorer
		node string
		card []int
		want float64
	}{
		{"NVLink pair earns the full bonus", nvlinkScorer{bonus: 400}, "h100", []int{0, 1}, 400},
		{"cards without NVLink earn nothing", nvlinkScorer{bonus: 400}, "h100", []int{1, 2}, 0},
		{"half of four cards' pairs linked", nvlinkScorer{bonus: 400}, "h100", []int{0, 1, 2, 3}, 400 * 2.0 / 6},
		{"40 GiB job on a 40 GiB card costs nothing", memoryFitScorer{weight: 300, want: 40960}, "a100-40", []int{0}, 0},
		{"40 GiB job on an 80 GiB card pays for the half left over", memoryFitScorer{weight: 300, want: 40960}, "a100", []int{0}, -150},
		{"inference steered to T4", kindScorer{bonus: 300, classes: c.classes, steer: steer}, "t4", []int{0}, 300},
		{"inference not steered to A100", kindScorer{bonus: 300, classes: c.classes, steer: steer}, "a100", []int{0}, 0},
		{"spot node preferred", spotScorer{bonus: 50}, "t4", []int{0}, 50},
		{"on-demand node not", spotScorer{bonus: 50}, "a100", []int{0}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, o := on(tc.node, 1000, tc.card...)
			if got := tc.s.score(n, o); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("score = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScarcityWeighting(t *testing.T) {
	classes := []gpuClass{{"A10", 24576}}
	small := nodeState{node: Node{CPUMilli: 32000}, gpus: []gpuState{{class: 0}, {class: 0}}}
	big := nodeState{node: Node{CPUMilli: 128000}, gpus: make([]gpuState, 8)}
	nodes := []nodeState{small, small, small, big}
	got := scarcityWeighted(Workload{
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 8000, Weight: 0.5},
		{GPUs: 8, GPUMilli: 1000, CPUMilli: 100000, Weight: 0.1},
		{GPUs: 1, GPUMilli: 500, CPUMilli: 2000, Weight: 0.3},
		{GPUs: 1, GPUMilli: 1000, GPUModels: []string{"H100"}, Weight: 0.1},
	}, classes, nodes)
	// The 8-GPU shape fits one node in four: its weight is four times 0.1; the H100 shape
	// fits no node and is dropped; the rest keep theirs. Renormalised over 0.5+0.4+0.3.
	want := []struct {
		gpus   int
		weight float64
	}{{1, 0.5 / 1.2}, {8, 0.4 / 1.2}, {1, 0.3 / 1.2}}
	if len(got) != len(want) {
		t.Fatalf("%d shapes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].shape.GPUs != w.gpus || math.Abs(got[i].weight-w.weight) > 1e-12 {
			t.Errorf("shape %d: %d GPUs weight %v, want %d GPUs weight %v", i, got[i].shape.GPUs, got[i].weight, w.gpus, w.weight)
		}
	}
}
