package scheduler

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// meshed joins cards from..to-1 of n by NVLink, each to every other.
func meshed(n Node, from, to int) Node {
	for g := from; g < to; g++ {
		for p := from; p < to; p++ {
			if p != g {
				n.GPUs[g].NVLinkPeers = append(n.GPUs[g].NVLinkPeers, p)
			}
		}
	}
	return n
}

// A job that requires NVLink goes only where its cards are joined each to every other:
// not to a node without NVLink though it is first and free, not to cards joined in
// pairs only, and on a partial mesh to the meshed cards; where none will do, the
// explanation says NVLink.
func TestNVLinkRequired(t *testing.T) {
	pcie := gpuNode("pcie", "A100", 8, 81920, 128000, 1<<20)
	dgx := meshed(gpuNode("dgx", "A100", 8, 81920, 128000, 1<<20), 0, 8)
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{pcie, dgx}})
	p := mustPlace(t, s, c, job("all8", Request{GPUs: 8, NVLink: true}))
	if node := p.Replicas[0].NodeID; node != "dgx" {
		t.Errorf("8 GPUs joined by NVLink placed on %s, want dgx", node)
	}
	// The same without the requirement still takes the free node.
	if p := mustPlace(t, s, c, job("any8", Request{GPUs: 8})); p.Replicas[0].NodeID != "pcie" {
		t.Errorf("8 GPUs placed on %s, want pcie", p.Replicas[0].NodeID)
	}

	// Cards 0-3 fully meshed, 4-7 in pairs, card 1 busy: three meshed cards are left.
	partial := meshed(nvlinkPairs(gpuNode("partial", "H100", 8, 81920, 128000, 1<<20)), 0, 4)
	for g := 4; g < 8; g++ {
		partial.GPUs[g].NVLinkPeers = []int{g ^ 1}
	}
	busy := []Allocation{{Job: job("b", Request{GPUs: 1}), Replica: ReplicaPlacement{NodeID: "partial", Devices: []DeviceAssignment{{GPUIndex: 1, Milli: 1000, MemoryMiB: 81920}}}}}
	s, c = newTestCluster(t, Snapshot{Nodes: []Node{partial}, Running: busy})
	p = mustPlace(t, s, c, job("three", Request{GPUs: 3, NVLink: true}))
	var cards []int
	for _, d := range p.Replicas[0].Devices {
		cards = append(cards, d.GPUIndex)
	}
	if slices.Sort(cards); !slices.Equal(cards, []int{0, 2, 3}) {
		t.Errorf("3 GPUs joined by NVLink got cards %v, want [0 2 3]", cards)
	}
	// Four meshed cards: the partial mesh has them, but they are busy now.
	_, ok, ex := s.Place(c, job("four", Request{GPUs: 4, NVLink: true}))
	if ok || ex.Rejections[RejectGPUsBusy] != 1 {
		t.Errorf("4 meshed GPUs with one busy: placed %v, rejections %v; want busy", ok, ex.Rejections)
	}
	// Five, with seven cards free: no node has five meshed cards at all.
	s, c = newTestCluster(t, Snapshot{Nodes: []Node{partial}, Running: busy})
	_, ok, ex = s.Place(c, job("five", Request{GPUs: 5, NVLink: true}))
	if ok || ex.Rejections[RejectNVLink] != 1 || !strings.Contains(ex.Reason, "no 5 GPUs joined by NVLink each to every other") {
		t.Errorf("5 meshed GPUs: placed %v, %v %q", ok, ex.Rejections, ex.Reason)
	}
}

// The shape cache keeps a job that requires NVLink apart from one that does not: the
// first failing says nothing of the second.
func TestNVLinkIsPartOfTheJobsShape(t *testing.T) {
	if keyOf(job("a", Request{GPUs: 2, NVLink: true})) == keyOf(job("b", Request{GPUs: 2})) {
		t.Error("a job that requires NVLink has the shape of one that does not")
	}
}

// NVLink is asked of two or more whole GPUs, and refused at submission where no node
// has that many joined each to every other.
func TestNVLinkValidation(t *testing.T) {
	offer := OfferOf([]Node{
		meshed(nvlinkPairs(gpuNode("a", "H100", 8, 81920, 128000, 1<<20)), 0, 4),
		gpuNode("b", "A100", 8, 81920, 128000, 1<<20),
	})
	if !maps.Equal(offer.NVLinkedByModel, map[string]int{"H100": 4}) {
		t.Errorf("NVLinkedByModel = %v, want H100: 4", offer.NVLinkedByModel)
	}
	cfg := DefaultConfig()
	for _, tc := range []struct {
		r    Request
		want string // "" for valid
	}{
		{Request{GPUs: 4, NVLink: true}, ""},
		{Request{GPUs: 5, NVLink: true}, "no node has 5 matching GPUs joined by NVLink each to every other (the most: 4)"},
		{Request{GPUs: 1, NVLink: true}, "NVLink joins two or more whole GPUs"},
		{Request{GPUs: 1, GPUMilli: 500, NVLink: true}, "NVLink joins two or more whole GPUs"},
		{Request{GPUs: 2, GPUModels: []string{"H100"}, NVLink: true}, ""},
		{Request{GPUs: 2, GPUModels: []string{"A100"}, NVLink: true}, "no node has matching GPUs joined by NVLink"},
	} {
		tc.r.Class = cfg.Classes[0].Name
		tc.r.Container = false
		err := ValidateRequest(tc.r, cfg, offer)
		var fe *FieldError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.r, err)
		case tc.want != "" && (!errors.As(err, &fe) || fe.Field != "nvlink" || !strings.Contains(fe.Message, tc.want)):
			t.Errorf("%+v: %v; want nvlink: %s", tc.r, err, tc.want)
		}
	}
	if o := OfferOf([]Node{gpuNode("b", "A100", 8, 81920, 128000, 1<<20)}); ValidateRequest(Request{GPUs: 2, NVLink: true, Class: cfg.Classes[0].Name}, cfg, o) == nil {
		t.Error("NVLink on a fleet without it is not refused")
	}
}
