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
