package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// FleetGPU is a GPU of the fleet with its MIG instances.
type FleetGPU struct {
	models.GPUDevice
	Slices []models.GPUSlice
}

// FleetGPUs returns every GPU of every node, removed ones too, by node id then index,
// with its MIG instances and without its CreatedAt and UpdatedAt: what the views of the
// whole fleet read (the scheduler's inventory, the cluster page). It reads through
// readRows: a thousand eight-GPU nodes through gorm cost 64 ms on SQLite, most of it
// scanning rows and parsing the times no view shows.
func (s *Store) FleetGPUs(ctx context.Context) ([]FleetGPU, error) {
	var out []FleetGPU
	var d models.GPUDevice
	dest := []any{&d.ID, &d.NodeID, &d.Index, &d.UUID, &d.Model, &d.MemoryMiB, &d.MIGEnabled, &d.NVLinkPeers, &d.PCIBusID, &d.Healthy, &d.HealthReason}
	query := s.selectRows("id, node_id, idx, uuid, model, memory_mib, mig_enabled, nvlink_peers, pci_bus_id, healthy, health_reason",
		"gpu_devices ORDER BY node_id, idx")
	var migDevs []int64 // only a GPU in MIG mode has instances
	at := map[int64]int{}
	err := s.readRows(ctx, s.rowsRead(query, nil, dest, func() {
		if d.MIGEnabled {
			migDevs = append(migDevs, d.ID)
			at[d.ID] = len(out)
		}
		out = append(out, FleetGPU{GPUDevice: d})
		d = models.GPUDevice{}
	}))
	if err != nil {
		return nil, fmt.Errorf("the fleet's GPUs: %w", err)
	}
	migs, err := s.SlicesOfDevices(ctx, migDevs)
	if err != nil {
		return nil, fmt.Errorf("the fleet's GPUs: %w", err)
	}
	for _, sl := range migs {
		g := &out[at[sl.DeviceID]]
		g.Slices = append(g.Slices, sl)
	}
	return out, nil
}

// GPUInventoryVersion is a number that grows with every change of the fleet's GPUs and
// MIG instances (CreateNode, ReplaceNodeDevices, in their transactions: the sum of the
// nodes' generations, each raised by a change of its node's): GPUs read after it was
// read are at least as new as it says, so a reader that kept them may keep them while
// it stays the same.
func (s *Store) GPUInventoryVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.read(ctx).Raw("SELECT COALESCE(SUM(gpu_generation), 0) FROM nodes").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("GPU inventory version: %w", err)
	}
	return v, nil
}

// raiseGPUInventory raises the GPU generation of node id, and so the inventory's
// version: every write of gpu_devices or gpu_slices does, in its transaction.
func (s *Store) raiseGPUInventory(ctx context.Context, id int64) error {
	return s.with(ctx).Exec("UPDATE nodes SET gpu_generation = gpu_generation + 1 WHERE id = ?", id).Error
}
