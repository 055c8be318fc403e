package scheduler

import (
	"slices"
	"testing"
)

// cardsOf lists the device indexes an option uses.
func cardsOf(n *nodeState, o option) []int {
	var out []int
	for k := 0; k < o.n; k++ {
		out = append(out, n.gpus[o.cards[k]].index)
	}
	return out
}

func TestDeviceOptions(t *testing.T) {
	mixed := gpuNode("mixed", "A100", 2, 81920, 64000, 512<<10)
	mixed.GPUs = append(mixed.GPUs, GPU{Index: 2, Model: "A100", MemoryMiB: 40960}, GPU{Index: 3, Model: "L4", MemoryMiB: 24576})
	// Card 1 of "shared" already holds a 300 milli share, card 2 a 600 one.
	shared := gpuNode("shared", "L4", 4, 24576, 64000, 512<<10)
	ring := nvlinkPairs(gpuNode("ring", "H100", 4, 81920, 64000, 512<<10))
	running := []Allocation{
		{Job: job("s1", Request{GPUs: 1, GPUMilli: 300}), Replica: ReplicaPlacement{NodeID: "shared", Devices: []DeviceAssignment{{GPUIndex: 1, Milli: 300, MemoryMiB: 7372}}}},
		{Job: job("s2", Request{GPUs: 1, GPUMilli: 600}), Replica: ReplicaPlacement{NodeID: "shared", Devices: []DeviceAssignment{{GPUIndex: 2, Milli: 600, MemoryMiB: 14745}}}},
		{Job: job("w0", Request{GPUs: 1}), Replica: ReplicaPlacement{NodeID: "ring", Devices: []DeviceAssignment{{GPUIndex: 0, Milli: 1000, MemoryMiB: 81920}}}},
	}
	cases := []struct {
		name      string
		node      string
		req       Request
		want      [][]int // device indexes per option
		wantWhy   reason
		wantMilli int
	}{
		{name: "one whole GPU takes the smallest card that fits", node: "mixed", req: Request{GPUs: 1, GPUModels: []string{"A100"}}, want: [][]int{{2}}, wantMilli: 1000},
		{name: "memory floor skips the 40 GiB card", node: "mixed", req: Request{GPUs: 1, GPUMemoryMiB: 50000}, want: [][]int{{0}}, wantMilli: 1000},
		{name: "model list restricts cards", node: "mixed", req: Request{GPUs: 1, GPUModels: []string{"L4"}}, want: [][]int{{3}}, wantMilli: 1000},
		{name: "unknown model", node: "mixed", req: Request{GPUs: 1, GPUModels: []string{"H100"}}, wantWhy: reasonGPUModel},
		{name: "more GPUs than the node has of the model", node: "mixed", req: Request{GPUs: 4, GPUModels: []string{"A100"}}, wantWhy: reasonGPUCount},
		{name: "share offers one option per distinct card state", node: "shared", req: Request{GPUs: 1, GPUMilli: 300}, want: [][]int{{0}, {1}, {2}}, wantMilli: 300},
		{name: "share too large for the partly used cards", node: "shared", req: Request{GPUs: 1, GPUMilli: 800}, want: [][]int{{0}}, wantMilli: 800},
		{name: "share with explicit memory limit", node: "shared", req: Request{GPUs: 1, GPUMilli: 100, GPUMemoryMiB: 12000}, want: [][]int{{0}, {1}}, wantMilli: 100},
		{name: "busy cards", node: "ring", req: Request{GPUs: 4}, wantWhy: reasonGPUsBusy},
		{name: "two GPUs land on an NVLink pair", node: "ring", req: Request{GPUs: 2}, want: [][]int{{2, 3}}, wantMilli: 1000},
		{name: "cpu-only job needs no device", node: "ring", req: Request{CPUMilli: 1000}, want: [][]int{nil}},
	}
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{mixed, shared, ring}, Running: running})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job("j", tc.req)
			d := newDemand(c, &j, s.Config())
			ni := c.byID[tc.node]
			opts, why := d.options(ni, &c.nodes[ni], nil)
			if why != tc.wantWhy {
				t.Fatalf("reason = %q, want %q", why, tc.wantWhy)
			}
			var got [][]int
			for _, o := range opts {
				got = append(got, cardsOf(&c.nodes[ni], o))
				if o.milli != tc.wantMilli {
					t.Errorf("option milli = %d, want %d", o.milli, tc.wantMilli)
				}
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
				t.Fatalf("options = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMIGOptionPacksTheFullestCard(t *testing.T) {
	a := migNode("a", "A100", 40960, migSlice("a0", "1g.5gb", 5), migSlice("a1", "1g.5gb", 5), migSlice("a2", "3g.20gb", 20))
	b := migNode("b", "A100", 40960, migSlice("b0", "1g.5gb", 5), migSlice("b1", "1g.5gb", 5))
	b.GPUs = append(b.GPUs, GPU{Index: 1, Model: "A100", MemoryMiB: 40960, MIG: []MIGSlice{migSlice("b2", "1g.5gb", 5), migSlice("b3", "1g.5gb", 5)}})
	running := []Allocation{{Job: job("m", Request{MIGProfile: "1g.5gb"}), Replica: ReplicaPlacement{NodeID: "b", Devices: []DeviceAssignment{{GPUIndex: 1, MIGSlice: "b2", Milli: 125}}}}}
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{a, b}, Running: running})

	cases := []struct {
		name      string
		node      string
		profile   string
		wantSlice string
		wantWhy   reason
	}{
		{"partly used card first", "b", "1g.5gb", "b3", reasonNone},
		{"first free slice of the profile", "a", "1g.5gb", "a0", reasonNone},
		{"larger profile", "a", "3g.20gb", "a2", reasonNone},
		{"profile not offered", "b", "3g.20gb", "", reasonMIG},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job("j", Request{MIGProfile: tc.profile})
			d := newDemand(c, &j, s.Config())
			ni := c.byID[tc.node]
			opts, why := d.options(ni, &c.nodes[ni], nil)
			if why != tc.wantWhy {
				t.Fatalf("reason = %q, want %q", why, tc.wantWhy)
			}
			if tc.wantSlice == "" {
				return
			}
			devs := opts[0].devices(&c.nodes[ni], c.classes)
			if devs[0].MIGSlice != tc.wantSlice || devs[0].MIGProfile != tc.profile {
				t.Fatalf("slice = %s (%s), want %s", devs[0].MIGSlice, devs[0].MIGProfile, tc.wantSlice)
			}
		})
	}
	t.Run("busy profile", func(t *testing.T) {
		mustPlace(t, s, c, job("x1", Request{MIGProfile: "3g.20gb"}))
		j := job("x2", Request{MIGProfile: "3g.20gb"})
		d := newDemand(c, &j, s.Config())
		if _, why := d.options(0, &c.nodes[0], nil); why != reasonMIGBusy {
			t.Fatalf("reason = %q, want %q", why, RejectMIGBusy)
		}
	})
}

func TestPickWholeOnNVSwitchAndPartialMesh(t *testing.T) {
	// Cards 0-3 are fully meshed; 4-7 only pairwise.
	n := gpuNode("dgx", "H100", 8, 81920, 128000, 1<<20)
	for g := 0; g < 4; g++ {
		for p := 0; p < 4; p++ {
			if p != g {
				n.GPUs[g].NVLinkPeers = append(n.GPUs[g].NVLinkPeers, p)
			}
		}
	}
	for g := 4; g < 8; g++ {
		n.GPUs[g].NVLinkPeers = []int{g ^ 1}
	}
	busy := []Allocation{{Job: job("b", Request{GPUs: 1}), Replica: ReplicaPlacement{NodeID: "dgx", Devices: []DeviceAssignment{{GPUIndex: 0, Milli: 1000, MemoryMiB: 81920}}}}}
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{n}, Running: busy})
	cases := []struct {
		gpus int
		want []int
	}{
		{2, []int{1, 2}},
		{3, []int{1, 2, 3}},
		{4, []int{1, 2, 3, 4}},
	}
	for _, tc := range cases {
		j := job("j", Request{GPUs: tc.gpus})
		d := newDemand(c, &j, s.Config())
		opts, _ := d.options(0, &c.nodes[0], nil)
		if got := cardsOf(&c.nodes[0], opts[0]); !slices.Equal(got, tc.want) {
			t.Errorf("%d GPUs: cards %v, want %v", tc.gpus, got, tc.want)
		}
	}
}
