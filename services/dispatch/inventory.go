package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// inventoryCache keeps the fleet's GPUs and MIG instances between scheduling passes
// (and previews), as read at the GPU inventory's version: each pass reads the version,
// and the GPUs again only when it moved. The GPUs change when a node joins or reports
// another inventory, seldom; reading 40,000 of them was most of a pass.
type inventoryCache struct {
	mu      sync.Mutex
	read    bool
	version int64
	gpus    []inventoryGPU
}

// inventoryGPU is one GPU as kept: shared by the passes, which must not change it.
type inventoryGPU struct {
	models.GPUDevice
	peers []int // NVLinkPeers, decoded
	migs  []models.GPUSlice
}

// fleet returns every GPU of every node, removed ones too, by node and index.
func (c *inventoryCache) fleet(ctx context.Context, st *store.Store) ([]inventoryGPU, error) {
	// The version first: GPUs read after it are at least as new as it says.
	version, err := st.GPUInventoryVersion(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read && c.version == version {
		return c.gpus, nil
	}
	all, err := st.FleetGPUs(ctx, true)
	if err != nil {
		return nil, err
	}
	var migDevs []int64 // only a GPU in MIG mode has instances
	for _, d := range all {
		if d.MIGEnabled {
			migDevs = append(migDevs, d.ID)
		}
	}
	slices, err := st.SlicesOfDevices(ctx, migDevs)
	if err != nil {
		return nil, err
	}
	migs := map[int64][]models.GPUSlice{}
	for _, sl := range slices {
		migs[sl.DeviceID] = append(migs[sl.DeviceID], sl)
	}
	gpus := make([]inventoryGPU, len(all))
	for i, d := range all {
		gpus[i] = inventoryGPU{GPUDevice: d, migs: migs[d.ID]}
		if d.NVLinkPeers != "" && d.NVLinkPeers != "[]" {
			if err := json.Unmarshal([]byte(d.NVLinkPeers), &gpus[i].peers); err != nil {
				return nil, fmt.Errorf("NVLink peers of %s: %w", d.UUID, err)
			}
		}
	}
	c.read, c.version, c.gpus = true, version, gpus
	return gpus, nil
}
