package store_test

import (
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// FleetGPUs reads every GPU of the nodes in service, each field as stored, by node and
// index; those of removed nodes only when asked.
func TestFleetGPUs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		removedAt := time.Now().UTC()
		a := &models.Node{Name: "gpu-a", State: models.NodeReady}
		gone := &models.Node{Name: "gpu-gone", State: models.NodeDown, RemovedAt: &removedAt}
		b := &models.Node{Name: "gpu-b", State: models.NodeReady}
		if err := s.CreateNode(ctx, a, []models.GPUDevice{
			{Index: 1, UUID: "GPU-a1", Model: "H100-80GB", MemoryMiB: 81559, NVLinkPeers: "[0]", PCIBusID: "0000:1b:00.0", Healthy: false, HealthReason: `Xid 79: "fell off the bus"`},
			{Index: 0, UUID: "GPU-a0", Model: "H100-80GB", MemoryMiB: 81559, MIGEnabled: true, NVLinkPeers: "[1]", Healthy: true},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateNode(ctx, gone, []models.GPUDevice{{Index: 0, UUID: "GPU-gone", Model: "L4-24GB", MemoryMiB: 23034, Healthy: true}}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateNode(ctx, b, []models.GPUDevice{{Index: 0, UUID: "GPU-b0", Model: "L4-24GB", MemoryMiB: 23034, Healthy: true}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.FleetGPUs(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].UUID != "GPU-a0" || got[1].UUID != "GPU-a1" || got[2].UUID != "GPU-b0" {
			t.Fatalf("the fleet's GPUs: %+v", got)
		}
		want := models.GPUDevice{ID: got[1].ID, NodeID: a.ID, Index: 1, UUID: "GPU-a1", Model: "H100-80GB", MemoryMiB: 81559, NVLinkPeers: "[0]",
			PCIBusID: "0000:1b:00.0", HealthReason: `Xid 79: "fell off the bus"`}
		if got[1] != want || !got[0].MIGEnabled || !got[0].Healthy || got[0].NodeID != a.ID || got[2].NodeID != b.ID || got[1].ID == 0 {
			t.Errorf("GPU-a1 = %+v, want %+v; GPU-a0 %+v", got[1], want, got[0])
		}
		all, err := s.FleetGPUs(ctx, true)
		if err != nil || len(all) != 4 || all[2].UUID != "GPU-gone" {
			t.Fatalf("with the removed nodes' GPUs: %+v %v", all, err)
		}
	})
}

// The GPU inventory's version moves with every change of a node's GPUs, and only then.
func TestGPUInventoryVersion(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		version := func() int64 {
			t.Helper()
			v, err := s.GPUInventoryVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		v0 := version()
		n := &models.Node{Name: "gpu-a", State: models.NodeReady}
		if err := s.SaveNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		if v := version(); v != v0 {
			t.Errorf("a node without GPUs moved the version: %d → %d", v0, v)
		}
		dev := models.GPUDevice{Index: 0, UUID: "GPU-a0", Model: "H100-80GB", MemoryMiB: 81559, Healthy: true}
		if err := s.ReplaceNodeDevices(ctx, n.ID, []store.NodeDevice{{GPUDevice: dev}}); err != nil {
			t.Fatal(err)
		}
		v1 := version()
		dev.Healthy = false
		if err := s.ReplaceNodeDevices(ctx, n.ID, []store.NodeDevice{{GPUDevice: dev}}); err != nil {
			t.Fatal(err)
		}
		v2 := version()
		if err := s.ReplaceNodeDevices(ctx, n.ID, nil); err != nil {
			t.Fatal(err)
		}
		if v3 := version(); !(v0 < v1 && v1 < v2 && v2 < v3) {
			t.Errorf("versions %d, %d, %d, %d: each change must raise it", v0, v1, v2, v3)
		}
		// A change refused (a UUID of another node) leaves it as it was.
		other := &models.Node{Name: "gpu-b", State: models.NodeReady}
		if err := s.SaveNode(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceNodeDevices(ctx, n.ID, []store.NodeDevice{{GPUDevice: dev}}); err != nil {
			t.Fatal(err)
		}
		before := version()
		if err := s.ReplaceNodeDevices(ctx, other.ID, []store.NodeDevice{{GPUDevice: dev}}); err == nil {
			t.Fatal("a UUID of another node was taken")
		}
		if v := version(); v != before {
			t.Errorf("a refused change moved the version: %d → %d", before, v)
		}
	})
}
