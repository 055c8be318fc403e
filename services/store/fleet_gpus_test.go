package store_test

import (
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// FleetGPUs reads every GPU of every node (removed ones too), each field as stored, by
// node and index, with its MIG instances.
func TestFleetGPUs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		removedAt := time.Now().UTC()
		a := &models.Node{Name: "gpu-a", State: models.NodeReady}
		gone := &models.Node{Name: "gpu-gone", State: models.NodeDown, RemovedAt: &removedAt}
		if err := s.CreateNode(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceNodeDevices(ctx, a.ID, []store.NodeDevice{
			{GPUDevice: models.GPUDevice{Index: 1, UUID: "GPU-a1", Model: "H100-80GB", MemoryMiB: 81559, NVLinkPeers: "[0]", PCIBusID: "0000:1b:00.0",
				Healthy: false, HealthReason: `Xid 79: "fell off the bus"`}},
			{GPUDevice: models.GPUDevice{Index: 0, UUID: "GPU-a0", Model: "H100-80GB", MemoryMiB: 81559, MIGEnabled: true, NVLinkPeers: "[1]", Healthy: true},
				Slices: []models.GPUSlice{{UUID: "MIG-a0a", Profile: "3g.40gb", MemoryMiB: 40192, ComputeSlices: 3}, {UUID: "MIG-a0b", Profile: "4g.40gb", MemoryMiB: 40192, ComputeSlices: 4}}},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateNode(ctx, gone, []models.GPUDevice{{Index: 0, UUID: "GPU-gone", Model: "L4-24GB", MemoryMiB: 23034, Healthy: true}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.FleetGPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].UUID != "GPU-a0" || got[1].UUID != "GPU-a1" || got[2].UUID != "GPU-gone" {
			t.Fatalf("the fleet's GPUs: %+v", got)
		}
		want := models.GPUDevice{ID: got[1].ID, NodeID: a.ID, Index: 1, UUID: "GPU-a1", Model: "H100-80GB", MemoryMiB: 81559, NVLinkPeers: "[0]",
			PCIBusID: "0000:1b:00.0", HealthReason: `Xid 79: "fell off the bus"`}
		if got[1].GPUDevice != want || len(got[1].Slices) != 0 || !got[0].MIGEnabled || !got[0].Healthy || got[0].NodeID != a.ID ||
			got[2].NodeID != gone.ID || got[1].ID == 0 {
			t.Errorf("GPU-a1 = %+v, want %+v; GPU-a0 %+v", got[1], want, got[0])
		}
		if sl := got[0].Slices; len(sl) != 2 || sl[0].UUID != "MIG-a0a" || sl[1].Profile != "4g.40gb" || sl[1].DeviceID != got[0].ID {
			t.Errorf("GPU-a0's MIG instances: %+v", sl)
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
		start := version()
		n := &models.Node{Name: "gpu-a", State: models.NodeReady}
		if err := s.CreateNode(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
		if v := version(); v != start {
			t.Errorf("a node without GPUs moved the version: %d → %d", start, v)
		}
		if err := s.CreateNode(ctx, &models.Node{Name: "gpu-c", State: models.NodeReady},
			[]models.GPUDevice{{Index: 0, UUID: "GPU-c0", Model: "L4-24GB", MemoryMiB: 23034, Healthy: true}}); err != nil {
			t.Fatal(err)
		}
		v0 := version()
		if v0 <= start {
			t.Errorf("a node created with GPUs left the version at %d", v0)
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
