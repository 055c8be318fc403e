package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// gpuNode builds a node with n identical cards.
func gpuNode(id, model string, n int, memMiB int64, cpuMilli, ramMiB int64) Node {
	node := Node{ID: id, Pool: "default", CPUMilli: cpuMilli, RAMMiB: ramMiB, ScratchMiB: 1 << 20}
	for g := 0; g < n; g++ {
		node.GPUs = append(node.GPUs, GPU{Index: g, UUID: fmt.Sprintf("%s-gpu%d", id, g), Model: model, MemoryMiB: memMiB})
	}
	return node
}

// nvlinkPairs joins cards (0,1), (2,3), … with NVLink.
func nvlinkPairs(n Node) Node {
	for g := range n.GPUs {
		if g^1 < len(n.GPUs) {
			n.GPUs[g].NVLinkPeers = []int{g ^ 1}
		}
	}
	return n
}

// migNode builds a node whose single card is split into the given MIG slices.
func migNode(id, model string, memMiB int64, slices ...MIGSlice) Node {
	n := gpuNode(id, model, 1, memMiB, 32000, 256<<10)
	n.GPUs[0].MIG = slices
	return n
}

func migSlice(id, profile string, memGiB int64) MIGSlice {
	return MIGSlice{ID: id, Profile: profile, MemoryMiB: memGiB << 10}
}

func job(id string, r Request) Job {
	return Job{ID: id, Team: "ml", SubmitTime: t0, Request: r}
}

func newTestCluster(t *testing.T, snap Snapshot) (*Scheduler, *Cluster) {
	t.Helper()
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Now.IsZero() {
		snap.Now = t0
	}
	c, err := NewCluster(snap, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// mustPlace places and commits a job, failing the test if it does not fit.
func mustPlace(t *testing.T, s *Scheduler, c *Cluster, j Job) Placement {
	t.Helper()
	p, ok, ex := s.Place(c, j)
	if !ok {
		t.Fatalf("job %s not placed: %s", j.ID, ex.Reason)
	}
	if err := c.Assume(j, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeOf renders every node's free capacity, to compare cluster states.
func freeOf(c *Cluster) string {
	var b strings.Builder
	for _, n := range c.nodes {
		f, _ := c.Free(n.node.ID)
		fmt.Fprintf(&b, "%s:%+v;", n.node.ID, f)
	}
	return b.String()
}
