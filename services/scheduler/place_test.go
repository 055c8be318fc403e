package scheduler

import (
	"fmt"
	"strings"
	"testing"
)

func TestPlaceBehaviours(t *testing.T) {
	t.Run("40 GiB job takes one 40 GiB card, not an 80 GiB one or two 24 GiB ones", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{
			gpuNode("l4", "L4", 2, 24576, 32000, 256<<10),
			gpuNode("a100-80", "A100", 1, 81920, 32000, 256<<10),
			gpuNode("a100-40", "A100", 1, 40960, 32000, 256<<10),
		}})
		p := mustPlace(t, s, c, job("j", Request{GPUs: 1, GPUMemoryMiB: 40960}))
		if got := p.Replicas[0]; got.NodeID != "a100-40" || len(got.Devices) != 1 || got.Devices[0].MemoryMiB != 40960 {
			t.Fatalf("placed on %+v, want the 40 GiB card of a100-40", got)
		}
	})
	t.Run("multi-GPU job lands on NVLink peers", func(t *testing.T) {
		flat := gpuNode("flat", "H100", 4, 81920, 64000, 512<<10)
		linked := nvlinkPairs(gpuNode("linked", "H100", 4, 81920, 64000, 512<<10))
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{flat, linked}})
		p := mustPlace(t, s, c, job("j", Request{GPUs: 2}))
		rp := p.Replicas[0]
		if rp.NodeID != "linked" || rp.Devices[0].GPUIndex != 0 || rp.Devices[1].GPUIndex != 1 {
			t.Fatalf("placed on %s %v, want linked cards 0,1", rp.NodeID, rp.Devices)
		}
	})
	t.Run("fractional jobs pack onto the already shared card", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{
			gpuNode("n1", "A10", 2, 24576, 32000, 256<<10),
			gpuNode("n2", "A10", 2, 24576, 32000, 256<<10),
		}, Workload: Workload{{GPUs: 1, GPUMilli: 1000, CPUMilli: 4000, Weight: 0.5}, {GPUs: 1, GPUMilli: 250, CPUMilli: 1000, Weight: 0.5}}})
		first := mustPlace(t, s, c, job("a", Request{GPUs: 1, GPUMilli: 250, CPUMilli: 1000}))
		for _, id := range []string{"b", "c", "d"} {
			p := mustPlace(t, s, c, job(id, Request{GPUs: 1, GPUMilli: 250, CPUMilli: 1000}))
			if p.Replicas[0].NodeID != first.Replicas[0].NodeID || p.Replicas[0].Devices[0].GPUIndex != first.Replicas[0].Devices[0].GPUIndex {
				t.Fatalf("share %s went to %s GPU %d, want the shared card %s GPU %d", id, p.Replicas[0].NodeID, p.Replicas[0].Devices[0].GPUIndex,
					first.Replicas[0].NodeID, first.Replicas[0].Devices[0].GPUIndex)
			}
			if d := p.Replicas[0].Devices[0]; d.Milli != 250 || d.MemoryMiB != 24576/4 {
				t.Fatalf("share device %+v, want 250 milli with a quarter of the memory", d)
			}
		}
		free, _ := c.Free(first.Replicas[0].NodeID)
		for _, g := range free.GPUs {
			if g.FreeMilli != 0 && g.FreeMilli != 1000 {
				t.Fatalf("four quarter shares left a card at %d milli free; want one full card", g.FreeMilli)
			}
		}
	})
	t.Run("MIG slice is a device of its own", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{
			gpuNode("plain", "A100", 1, 40960, 32000, 256<<10),
			migNode("mig", "A100", 40960, migSlice("s0", "1g.5gb", 5), migSlice("s1", "1g.5gb", 5), migSlice("s2", "2g.10gb", 10)),
		}})
		p := mustPlace(t, s, c, job("j", Request{MIGProfile: "2g.10gb"}))
		d := p.Replicas[0].Devices[0]
		if p.Replicas[0].NodeID != "mig" || d.MIGSlice != "s2" || d.MIGProfile != "2g.10gb" || d.Milli != 250 {
			t.Fatalf("placed %+v on %s, want slice s2 of mig at 250 milli", d, p.Replicas[0].NodeID)
		}
		_, ok, ex := s.Place(c, job("k", Request{MIGProfile: "2g.10gb"}))
		if ok || ex.Rejections[RejectMIGBusy] != 1 || ex.Rejections[RejectMIG] != 1 {
			t.Fatalf("second 2g.10gb: ok=%v rejections %v, want mig busy on one node and no profile on the other", ok, ex.Rejections)
		}
		whole := mustPlace(t, s, c, job("w", Request{GPUs: 1}))
		if whole.Replicas[0].NodeID != "plain" {
			t.Fatalf("whole GPU went to %s; a MIG card cannot be used whole", whole.Replicas[0].NodeID)
		}
	})
	t.Run("gang places all replicas or none and leaves the cluster unchanged", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{
			gpuNode("n1", "A100", 4, 40960, 64000, 256<<10),
			gpuNode("n2", "A100", 4, 40960, 64000, 256<<10),
		}})
		before := freeOf(c)
		if _, ok, ex := s.Place(c, job("big", Request{GPUs: 4, Replicas: 3})); ok || !strings.Contains(ex.Reason, "only 2 of 3 gang replicas") {
			t.Fatalf("3 × 4 GPUs on 8 GPUs: ok=%v reason %q", ok, ex.Reason)
		}
		if after := freeOf(c); after != before {
			t.Fatalf("failed gang changed the cluster: %s -> %s", before, after)
		}
		p := mustPlace(t, s, c, job("fits", Request{GPUs: 2, Replicas: 4}))
		if len(p.Replicas) != 4 {
			t.Fatalf("%d replicas placed, want 4", len(p.Replicas))
		}
		for i, rp := range p.Replicas {
			if rp.Replica != i || len(rp.Devices) != 2 {
				t.Fatalf("replica %d: %+v", i, rp)
			}
		}
	})
	t.Run("kind steering sends inference to L4 and training to A100", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{
			gpuNode("a100", "A100", 4, 81920, 64000, 512<<10),
			gpuNode("l4", "L4", 4, 24576, 64000, 512<<10),
		}})
		if p := mustPlace(t, s, c, job("inf", Request{GPUs: 1, Kind: KindInference})); p.Replicas[0].NodeID != "l4" {
			t.Fatalf("inference went to %s", p.Replicas[0].NodeID)
		}
		if p := mustPlace(t, s, c, job("train", Request{GPUs: 1, Kind: KindTraining})); p.Replicas[0].NodeID != "a100" {
			t.Fatalf("training went to %s", p.Replicas[0].NodeID)
		}
		if p := mustPlace(t, s, c, job("named", Request{GPUs: 1, Kind: KindInference, GPUModels: []string{"A100"}})); p.Replicas[0].NodeID != "a100" {
			t.Fatalf("a job naming A100 went to %s", p.Replicas[0].NodeID)
		}
	})
	t.Run("spot nodes only for jobs that allow spot, and preferred by them", func(t *testing.T) {
		spot := gpuNode("spot", "T4", 1, 15360, 16000, 64<<10)
		spot.Spot = true
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{gpuNode("od", "T4", 1, 15360, 16000, 64<<10), spot}})
		if p := mustPlace(t, s, c, job("cheap", Request{GPUs: 1, SpotAllowed: true})); p.Replicas[0].NodeID != "spot" {
			t.Fatalf("spot-allowed job went to %s", p.Replicas[0].NodeID)
		}
		_, ok, ex := s.Place(c, job("strict", Request{GPUs: 1, CPUMilli: 16001}))
		if ok || ex.Rejections[RejectSpot] != 1 || ex.Rejections[RejectCPU] != 1 {
			t.Fatalf("ok=%v rejections %v", ok, ex.Rejections)
		}
	})
	t.Run("cheaper nodes first; a cheap spot node never for a job that does not allow spot", func(t *testing.T) {
		dear := gpuNode("dear", "T4", 2, 15360, 16000, 64<<10)
		dear.PriceMicros = 2_000_000
		cheap := gpuNode("cheap", "T4", 2, 15360, 16000, 64<<10)
		cheap.PriceMicros = 1_000_000
		spot := gpuNode("spot", "T4", 2, 15360, 16000, 64<<10)
		spot.Spot, spot.PriceMicros = true, 300_000
		s, c := newTestCluster(t, Snapshot{Nodes: []Node{dear, cheap, spot}})
		if p := mustPlace(t, s, c, job("od", Request{GPUs: 1})); p.Replicas[0].NodeID != "cheap" {
			t.Fatalf("an on-demand job went to %s, not the cheaper on-demand node", p.Replicas[0].NodeID)
		}
		if p := mustPlace(t, s, c, job("any", Request{GPUs: 1, SpotAllowed: true})); p.Replicas[0].NodeID != "spot" {
			t.Fatalf("a spot-allowed job went to %s, not the cheapest (spot) node", p.Replicas[0].NodeID)
		}
		for _, id := range []string{"od2", "od3", "od4"} {
			if p := mustPlace(t, s, c, job(id, Request{GPUs: 1})); p.Replicas[0].NodeID == "spot" {
				t.Fatalf("job %s, which does not allow spot, landed on the spot node", id)
			}
		}
	})
}

func TestSmallJobsLeaveTheRareBigNodeWhole(t *testing.T) {
	// Only "big" can ever host the occasional 8-GPU, 100-core job.
	nodes := []Node{gpuNode("big", "A100", 8, 81920, 128000, 1<<20)}
	for i := 0; i < 6; i++ {
		nodes = append(nodes, gpuNode(fmt.Sprintf("small%d", i), "A100", 2, 81920, 32000, 256<<10))
	}
	workload := Workload{
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 8000, Weight: 0.6},
		{CPUMilli: 8000, Weight: 0.38},
		{GPUs: 8, GPUMilli: 1000, CPUMilli: 100000, Weight: 0.02},
	}
	s, c := newTestCluster(t, Snapshot{Nodes: nodes, Workload: workload})
	for i := 0; i < 10; i++ {
		r := Request{GPUs: 1, CPUMilli: 8000}
		if i%2 == 1 {
			// CPU-only jobs may use the big node's spare cores, not the ones it needs.
			r = Request{CPUMilli: 8000}
		}
		if p := mustPlace(t, s, c, job(fmt.Sprintf("j%d", i), r)); r.GPUs > 0 && p.Replicas[0].NodeID == "big" {
			t.Fatalf("GPU job %d took a card of the only node an 8-GPU job fits", i)
		}
	}
	if p := mustPlace(t, s, c, job("eight", Request{GPUs: 8, CPUMilli: 100000})); p.Replicas[0].NodeID != "big" {
		t.Fatalf("8-GPU job on %s", p.Replicas[0].NodeID)
	}
}

func TestExplanation(t *testing.T) {
	cordoned := gpuNode("c", "A100", 8, 40960, 64000, 512<<10)
	cordoned.Cordoned = true
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{
		gpuNode("a1", "A100", 2, 40960, 64000, 512<<10),
		gpuNode("a2", "A100", 8, 40960, 8000, 512<<10),
		gpuNode("l4", "L4", 8, 24576, 64000, 512<<10),
		cordoned,
	}})
	mustPlace(t, s, c, job("busy", Request{GPUs: 1, GPUModels: []string{"A100"}}))
	_, ok, ex := s.Place(c, job("j", Request{GPUs: 4, GPUModels: []string{"A100"}, CPUMilli: 16000, RAMMiB: 64 << 10}))
	if ok {
		t.Fatal("placed a job no node fits")
	}
	want := map[string]int{RejectCordoned: 1, RejectCPU: 1, RejectGPUModel: 1, RejectGPUCount: 1}
	for k, v := range want {
		if ex.Rejections[k] != v {
			t.Errorf("rejections[%q] = %d, want %d (all: %v)", k, ex.Rejections[k], v, ex.Rejections)
		}
	}
	for _, part := range []string{"4 × A100 GPU", "16 CPU cores", "64 GiB RAM", "1 node cordoned", "1 node lacks 16 free CPU cores", "1 node has no A100 GPU", "fewer than 4 A100 GPUs"} {
		if !strings.Contains(ex.Reason, part) {
			t.Errorf("reason %q lacks %q", ex.Reason, part)
		}
	}
	if ex.Nodes != 4 {
		t.Errorf("nodes = %d, want 4", ex.Nodes)
	}
	t.Run("invalid request explains the field", func(t *testing.T) {
		_, ok, ex := s.Place(c, job("bad", Request{GPUs: 2, GPUMilli: 500}))
		if ok || !strings.Contains(ex.Reason, "gpu_milli") {
			t.Fatalf("ok=%v reason %q", ok, ex.Reason)
		}
	})
	t.Run("empty cluster", func(t *testing.T) {
		s, c := newTestCluster(t, Snapshot{})
		if _, ok, ex := s.Place(c, job("j", Request{CPUMilli: 1})); ok || ex.Reason != "the cluster has no nodes" {
			t.Fatalf("ok=%v reason %q", ok, ex.Reason)
		}
	})
}

func TestTiesGoToTheEarlierNode(t *testing.T) {
	nodes := []Node{gpuNode("z", "T4", 2, 15360, 16000, 64<<10), gpuNode("a", "T4", 2, 15360, 16000, 64<<10)}
	s, c := newTestCluster(t, Snapshot{Nodes: nodes})
	if p := mustPlace(t, s, c, job("j", Request{GPUs: 2})); p.Replicas[0].NodeID != "z" {
		t.Fatalf("tie went to %s, want the first listed node z", p.Replicas[0].NodeID)
	}
}
