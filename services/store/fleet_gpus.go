package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// FleetGPUs returns the GPUs of every node not removed (with withRemoved, of every
// node), by node id then index, without their CreatedAt and UpdatedAt: what the views
// of the whole fleet read (the cluster page every 5 seconds, the scheduler's inventory).
// It reads through readRows: a thousand eight-GPU nodes through gorm cost 64 ms on
// SQLite, most of it scanning rows and parsing the times no view shows.
func (s *Store) FleetGPUs(ctx context.Context, withRemoved bool) ([]models.GPUDevice, error) {
	var out []models.GPUDevice
	var d models.GPUDevice
	dest := []any{&d.ID, &d.NodeID, &d.Index, &d.UUID, &d.Model, &d.MemoryMiB, &d.MIGEnabled, &d.NVLinkPeers, &d.PCIBusID, &d.Healthy, &d.HealthReason}
	cols := "d.id, d.node_id, d.idx, d.uuid, d.model, d.memory_mib, d.mig_enabled, d.nvlink_peers, d.pci_bus_id, d.healthy, d.health_reason"
	asJSON := s.dialect == migrations.SQLite
	if asJSON {
		cols = "json_array(" + cols + ")" // one value a row: see signIn
	}
	query := "SELECT " + cols + " FROM gpu_devices d"
	if !withRemoved {
		query += " JOIN nodes n ON n.id = d.node_id WHERE n.removed_at IS NULL"
	}
	query += " ORDER BY d.node_id, d.idx"
	err := s.readRows(ctx, s.rowsRead(query, nil, dest, func() {
		out = append(out, d)
		d = models.GPUDevice{}
	}))
	if err != nil {
		return nil, fmt.Errorf("the fleet's GPUs: %w", err)
	}
	return out, nil
}

// GPUInventoryVersion is a number that moves with every change of the fleet's GPUs and
// MIG instances (ReplaceNodeDevices, in its transaction): GPUs read after it was read
// are at least as new as it says, so a reader that kept them may keep them while it
// stays the same.
func (s *Store) GPUInventoryVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.read(ctx).Raw("SELECT version FROM gpu_inventory WHERE id = 1").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("GPU inventory version: %w", err)
	}
	return v, nil
}
