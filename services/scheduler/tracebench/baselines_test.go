package tracebench

import (
	"math"
	"slices"
	"testing"
)

// literalCluster builds a harness cluster over literal nodes of models A and B.
func literalCluster(typical []TypicalPod, nodes ...simNode) *simCluster {
	c := &simCluster{models: []string{"A", "B"}, nodes: nodes}
	c.frag = newFragMeasure(typical, c.models)
	for i := range c.nodes {
		c.priority = append(c.priority, i)
		n := &c.nodes[i]
		n.frag = c.frag.node(n.model, n.cpuLeft, n.left)
	}
	return c
}

func TestBaselineScores(t *testing.T) {
	whole := &TracePod{CPUMilli: 8000, Num: 1, Milli: 1000}
	share := &TracePod{CPUMilli: 8000, Num: 1, Milli: 300}
	cpuOnly := &TracePod{CPUMilli: 8000}
	mixed := simNode{model: 0, cpuLeft: 64000, memLeft: 1 << 20, left: []int{1000, 1000, 500, 0}, shareTags: 2}
	empty := simNode{model: 0, cpuLeft: 64000, memLeft: 1 << 20, left: []int{1000, 1000, 1000, 1000}}
	c := literalCluster(nil, mixed, empty)
	m, e := &c.nodes[0], &c.nodes[1]
	cases := []struct {
		name  string
		score scoreFunc
		node  *simNode
		pod   *TracePod
		want  int64
	}{
		// trunc(100·(1 − [0.5·56000/128000 + 0.5·1500/8000])) = trunc(68.75)
		{"bestfit", scoreBestFit, m, whole, 68},
		// trunc(100·(1 − ½[(64/128)(8/128) + (2500/8000)(1000/8000)])) = trunc(96.48)
		{"dotprod", scoreDotProd, m, whole, 96},
		{"gpupacking all free: max(33−f, f)", scoreGPUPacking, e, whole, 29},
		{"gpupacking share on a used GPU: 100 − ⌊50/10⌋", scoreGPUPacking, m, share, 95},
		{"gpupacking whole on a free GPU: max(50−1, 33)", scoreGPUPacking, m, whole, 49},
		{"gpupacking CPU-only", scoreGPUPacking, m, cpuOnly, 0},
		// b = ⌊25·(8000−2500)/8000⌋ = 17
		{"gpuclustering share with shares only", scoreGPUClustering, m, share, 17 + 75},
		{"gpuclustering whole with other tags only", scoreGPUClustering, m, whole, 17},
		// b = ⌊25·(8000−4000)/8000⌋ = 12: the constant is 8000 whatever the node has
		{"gpuclustering empty node", scoreGPUClustering, e, share, 12 + 25},
		{"gpuclustering CPU-only", scoreGPUClustering, e, cpuOnly, 0},
		{"firstfit scores all alike", scoreFirstFit, m, whole, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.score(c, tc.node, tc.pod); got != tc.want {
				t.Fatalf("score = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGPUSelection(t *testing.T) {
	c := literalCluster(nil, simNode{model: 0, cpuLeft: 64000, left: []int{1000, 400, 1000, 300, 700}})
	n := &c.nodes[0]
	cases := []struct {
		name string
		pick pickFunc
		pod  *TracePod
		want []int
	}{
		{"whole GPUs: first free by index", pickBest, &TracePod{Num: 2, Milli: 1000}, []int{0, 2}},
		{"share: tightest GPU that fits", pickBest, &TracePod{Num: 1, Milli: 350}, []int{1}},
		{"share: tightest, lowest index on ties", pickBest, &TracePod{Num: 1, Milli: 800}, []int{0}},
		{"first fit: lowest index that fits", pickFirst, &TracePod{Num: 1, Milli: 350}, []int{0}},
		{"CPU-only: no GPU", pickBest, &TracePod{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pick(c, n, tc.pod); !slices.Equal(got, tc.want) {
				t.Fatalf("picked %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFragmentationAndFGD(t *testing.T) {
	typical := []TypicalPod{
		{CPUMilli: 1000, Milli: 500, Num: 1, Weight: 0.4},
		{CPUMilli: 1000, Milli: 1000, Num: 1, Spec: []string{"A"}, Weight: 0.4},
		{CPUMilli: 1000, Weight: 0.2},
	}
	c := literalCluster(typical,
		simNode{model: 0, cpuLeft: 4000, left: []int{1000, 300}},
		simNode{model: 1, cpuLeft: 4000, left: []int{1000, 300}},
		simNode{model: 0, cpuLeft: 500, left: []int{1000, 300}},
	)
	cases := []struct {
		name string
		node int
		want float64
	}{
		// share: 300 too small → 0.4·300; whole: 300 too small → 0.4·300; CPU-only: 0.2·1300
		{"fits both GPU shapes", 0, 0.4*300 + 0.4*300 + 0.2*1300},
		// the whole-GPU shape cannot use model B: all idle counts
		{"model not accessible", 1, 0.4*300 + 0.4*1300 + 0.2*1300},
		// no shape's CPU fits: all idle counts for every shape
		{"CPU exhausted", 2, 1300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.nodes[tc.node].frag; math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("F = %v, want %v", got, tc.want)
			}
		})
	}
	if fgdQuantised(0) != 50 || fgdQuantised(1000) != 73 || fgdQuantised(-1000) != 26 {
		t.Fatalf("q(0), q(1000), q(-1000) = %d, %d, %d; want 50, 73, 26", fgdQuantised(0), fgdQuantised(1000), fgdQuantised(-1000))
	}
	t.Run("FGD puts a share where it fills the fragment", func(t *testing.T) {
		c := literalCluster(typical, simNode{model: 0, cpuLeft: 4000, left: []int{1000, 500}})
		score, gpus := fgdBest(c, &c.nodes[0], &TracePod{CPUMilli: 1000, Num: 1, Milli: 500})
		// Filling GPU 1 leaves {1000, 0}: F drops from 0.2·1500 + 0.4·500 to 0.2·1000.
		if !slices.Equal(gpus, []int{1}) || score != fgdQuantised(0.2*1500+0.4*500-0.2*1000) {
			t.Fatalf("score %d on %v", score, gpus)
		}
	})
}
