package scheduler

import (
	"errors"
	"strings"
	"testing"
)

func TestNewClusterRejectsInconsistentInput(t *testing.T) {
	n := gpuNode("n1", "A100", 2, 40960, 16000, 64<<10)
	dupGPU := n
	dupGPU.GPUs = []GPU{{Index: 0, Model: "A100"}, {Index: 0, Model: "A100"}}
	badPeer := gpuNode("n2", "A100", 2, 40960, 16000, 64<<10)
	badPeer.GPUs[0].NVLinkPeers = []int{7}
	alloc := func(node string, gpu, milli int, cpu int64) Allocation {
		return Allocation{Job: job("r", Request{GPUs: 1}), Replica: ReplicaPlacement{NodeID: node, CPUMilli: cpu, Devices: []DeviceAssignment{{GPUIndex: gpu, Milli: milli}}}}
	}
	cases := []struct {
		name string
		snap Snapshot
		want string
	}{
		{"empty node id", Snapshot{Nodes: []Node{{}}}, "nodes[0]: id: must not be empty"},
		{"duplicate node", Snapshot{Nodes: []Node{n, n}}, `nodes[1].id: node "n1" is listed twice`},
		{"duplicate GPU index", Snapshot{Nodes: []Node{dupGPU}}, "lists GPU 0 twice"},
		{"NVLink peer that is not a GPU of the node", Snapshot{Nodes: []Node{badPeer}}, "names NVLink peer 7"},
		{"allocation on an unknown node", Snapshot{Nodes: []Node{n}, Running: []Allocation{alloc("ghost", 0, 1000, 0)}}, `node "ghost" is unknown`},
		{"allocation on an unknown GPU", Snapshot{Nodes: []Node{n}, Running: []Allocation{alloc("n1", 5, 1000, 0)}}, "has no GPU 5"},
		{"over-committed GPU", Snapshot{Nodes: []Node{n}, Running: []Allocation{alloc("n1", 0, 600, 0), alloc("n1", 0, 600, 0)}}, "cannot take 600 milli-GPU"},
		{"over-committed CPU", Snapshot{Nodes: []Node{n}, Running: []Allocation{alloc("n1", 0, 1000, 20000)}}, "not enough free CPU"},
		{"negative quota", Snapshot{Nodes: []Node{n}, Quotas: []Quota{{Team: "ml", Nominal: -1}}}, "quotas[0].nominal"},
		{"lending more than nominal", Snapshot{Nodes: []Node{n}, Quotas: []Quota{{Team: "ml", Nominal: 1000, LendingLimit: 2000}}}, "quotas[0].lending_limit"},
		{"two quotas for one model", Snapshot{Nodes: []Node{n}, Quotas: []Quota{{Team: "ml", Model: "A100"}, {Team: "ml", Model: "A100"}}}, "two quotas for A100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCluster(tc.snap, DefaultConfig())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("field errors are typed", func(t *testing.T) {
		_, err := NewCluster(Snapshot{Nodes: []Node{n, n}}, DefaultConfig())
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "nodes[1].id" {
			t.Fatalf("err = %#v, want a FieldError on nodes[1].id", err)
		}
	})
}

func TestAssumeAndRelease(t *testing.T) {
	s, c := newTestCluster(t, Snapshot{Nodes: []Node{gpuNode("n1", "A100", 2, 40960, 16000, 64<<10)}})
	empty := freeOf(c)
	j := job("j", Request{GPUs: 1, GPUMilli: 400, CPUMilli: 2000, RAMMiB: 1024, ScratchMiB: 10})
	p := mustPlace(t, s, c, j)
	f, _ := c.Free("n1")
	if f.CPUMilli != 14000 || f.RAMMiB != 63<<10 || f.GPUs[p.Replicas[0].Devices[0].GPUIndex].FreeMilli != 600 {
		t.Fatalf("free after assume: %+v", f)
	}
	if got := c.Running(); len(got) != 1 || got[0].Job.ID != "j" || !got[0].StartTime.Equal(t0) {
		t.Fatalf("running = %+v", got)
	}
	if err := c.Assume(j, Placement{JobID: "x", Replicas: []ReplicaPlacement{{NodeID: "n1", CPUMilli: 15000}}}); err == nil {
		t.Fatal("assumed a placement that over-commits CPU")
	}
	if err := c.Release("j"); err != nil {
		t.Fatal(err)
	}
	if freeOf(c) != empty {
		t.Fatalf("release did not restore the node: %s", freeOf(c))
	}
	if err := c.Release("j"); err == nil {
		t.Fatal("released a job twice")
	}
	if _, ok := c.Free("ghost"); ok {
		t.Fatal("free capacity of an unknown node")
	}
}
