package scheduler

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCapacityIndex(t *testing.T) {
	nodes := make([]nodeState, 130)
	for i := range nodes {
		nodes[i].gpus = make([]gpuState, 4)
	}
	x := newCapacityIndex(nodes)
	x.file(3, 4, 1000)
	x.file(70, 2, 1000)
	x.file(129, 0, 300)
	x.file(70, 1, 600) // refiling clears what no longer holds
	members := func(set []uint64) []int {
		var out []int
		for i := next(set, 0, len(nodes)); i < len(nodes); i = next(set, i+1, len(nodes)) {
			out = append(out, i)
		}
		return out
	}
	cases := []struct {
		name string
		d    demand
		want []int
	}{
		{"two whole GPUs", demand{cards: 2, milli: 1000}, []int{3}},
		{"one whole GPU", demand{cards: 1, milli: 1000}, []int{3, 70}},
		{"a 300 share", demand{cards: 1, milli: 300}, []int{3, 70, 129}},
		{"a 620 share: node 70's 600 shares its bucket, so it is offered and rejected later", demand{cards: 1, milli: 620}, []int{3, 70}},
		{"a 650 share", demand{cards: 1, milli: 650}, []int{3}},
		{"more GPUs than any node has", demand{cards: 5, milli: 1000}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := members(x.candidates(&tc.d)); !slices.Equal(got, tc.want) {
				t.Fatalf("candidates %v, want %v", got, tc.want)
			}
		})
	}
	for _, d := range []demand{{}, {cards: 1, mig: "1g.5gb"}} {
		if x.candidates(&d) != nil {
			t.Fatalf("%+v: CPU-only and MIG demands must visit every node", d)
		}
	}
	if next([]uint64{}, 0, 10) != 10 {
		t.Fatal("next on an empty set")
	}
}

// naiveBest scores every node's every option with no index, no skipping of alike
// nodes and no memo: the reference the chain must agree with.
func naiveBest(c *Cluster, cfg Config, j *Job) (option, bool) {
	st := newStack(c, cfg, j, anywhere())
	best := option{node: -1}
	for i := range c.nodes {
		n := &c.nodes[i]
		if !st.feasible(n) {
			continue
		}
		opts, why := st.d.options(i, n, nil)
		if why != reasonNone {
			continue
		}
		for _, o := range opts {
			if !st.admit(n, &o) {
				continue
			}
			for _, sc := range st.scorers {
				if p, ok := sc.(packingScorer); ok {
					o.score += p.delta(n, &o)
				} else {
					o.score += sc.score(n, &o)
				}
			}
			if best.node < 0 || o.score > best.score {
				best = o
			}
		}
	}
	return best, best.node >= 0
}

// TestChainMatchesExhaustiveSearch replays random jobs: the capacity index, the skipping
// of alike nodes and the packing memo never change which node and cards win.
func TestChainMatchesExhaustiveSearch(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes := randomNodes(rng, 16)
		// Alike nodes, so that skipping them matters, and nodes alike in free capacity
		// but not in NVLink or spot, which must not be skipped.
		for i := 0; i < 8; i++ {
			n := gpuNode(fmt.Sprintf("twin%d", i), "A100", 4, 40960, 64000, 256<<10)
			if i%2 == 1 {
				n = nvlinkPairs(n)
			}
			n.Spot = i%4 == 3
			nodes = append(nodes, n)
		}
		s, c := newTestCluster(t, Snapshot{Nodes: nodes})
		for i := 0; i < 150; i++ {
			j := job(fmt.Sprintf("j%d", i), randomRequest(rng))
			j.Request.Replicas = 0
			want, wantOK := naiveBest(c, s.Config(), &j)
			got, gotOK := newStack(c, s.Config(), &j, anywhere()).best()
			if gotOK != wantOK || (gotOK && (got.node != want.node || got.cards != want.cards || got.slice != want.slice)) {
				t.Fatalf("seed %d job %d %+v: chain chose node %d cards %v, exhaustive node %d cards %v", seed, i, j.Request, got.node, got.cards, want.node, want.cards)
			}
			if gotOK {
				if err := c.Assume(j, Placement{JobID: j.ID, Replicas: []ReplicaPlacement{newStack(c, s.Config(), &j, anywhere()).replica(got, 0)}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestSampledScoringOnLargeClusters(t *testing.T) {
	var nodes []Node
	for i := 0; i < 6; i++ {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i), "A100", 2, 40960, 32000, 256<<10))
	}
	// Node n4 is the best fit for a share (it already holds one); node order favours n0.
	running := []Allocation{{Job: job("s", Request{GPUs: 1, GPUMilli: 500}), Replica: ReplicaPlacement{NodeID: "n4", Devices: []DeviceAssignment{{GPUIndex: 0, Milli: 500, MemoryMiB: 20480}}}}}
	share := job("j", Request{GPUs: 1, GPUMilli: 500})
	cases := []struct {
		name     string
		full     int
		sample   int
		wantNode string
	}{
		{"small cluster: every node scored", 8, 2, "n4"},
		{"large cluster: the first two feasible nodes only", 4, 2, "n0"},
		{"large cluster, sample covering the node", 4, 5, "n4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FullScanNodes, cfg.SampleNodes = tc.full, tc.sample
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			workload := Workload{{GPUs: 1, GPUMilli: 1000, Weight: 0.5}, {GPUs: 1, GPUMilli: 500, Weight: 0.5}}
			c, err := NewCluster(Snapshot{Now: t0, Nodes: nodes, Running: running, Workload: workload}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p, ok, ex := s.Place(c, share)
			if !ok || p.Replicas[0].NodeID != tc.wantNode {
				t.Fatalf("placed %v on %+v (%s), want %s", ok, p.Replicas, ex.Reason, tc.wantNode)
			}
		})
	}
}

func TestFailedJobsExplainThoseTheyDominate(t *testing.T) {
	fs := failures{}
	base := Job{ID: "a", Team: "ml", Request: Request{GPUs: 1, CPUMilli: 8000, RAMMiB: 1024, ExpectedRuntime: time.Hour}}
	fs.add(base, Explanation{Reason: "no node has room"})
	mod := func(edit func(*Job)) Job {
		j := base
		j.ID = "b"
		edit(&j)
		return j
	}
	cases := []struct {
		name      string
		j         Job
		dominated bool
	}{
		{"more CPU", mod(func(j *Job) { j.Request.CPUMilli = 9000 }), true},
		{"same ask", mod(func(*Job) {}), true},
		{"unknown run time counts as longer", mod(func(j *Job) { j.Request.ExpectedRuntime = 0 }), true},
		{"less RAM may fit", mod(func(j *Job) { j.Request.RAMMiB = 512 }), false},
		{"shorter run time may backfill", mod(func(j *Job) { j.Request.ExpectedRuntime = time.Minute }), false},
		{"another team has its own quota", mod(func(j *Job) { j.Team = "cv" }), false},
		{"another model list", mod(func(j *Job) { j.Request.GPUModels = []string{"L4"} }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, ok := fs.dominating(tc.j)
			if ok != tc.dominated {
				t.Fatalf("dominated = %v, want %v", ok, tc.dominated)
			}
			if ok && !strings.HasPrefix(ex.Reason, "like job a, which asks for no more and does not fit either: no node has room") {
				t.Fatalf("reason %q", ex.Reason)
			}
		})
	}
}
