package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gantry-gpu/gantry/services/store"
)

// inventoryCache keeps the fleet's GPUs and MIG instances between scheduling passes
// (and previews, and the cluster page), as read at the GPU inventory's version: each
// reader reads the version, and the GPUs again only when it moved. The GPUs change when
// a node joins or reports another inventory, seldom; reading 40,000 of them was most of
// a pass.
type inventoryCache struct {
	mu      sync.Mutex
	read    bool
	version int64
	gpus    []store.FleetGPU
	peers   [][]int // each GPU's NVLinkPeers, decoded
}

// fleet returns every GPU of every node, removed ones too, by node and index, and
// their NVLink peers; both are shared, and must not be changed.
func (c *inventoryCache) fleet(ctx context.Context, st *store.Store) ([]store.FleetGPU, [][]int, error) {
	// The version first: GPUs read after it are at least as new as it says.
	version, err := st.GPUInventoryVersion(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read && c.version == version {
		return c.gpus, c.peers, nil
	}
	gpus, err := st.FleetGPUs(ctx)
	if err != nil {
		return nil, nil, err
	}
	peers := make([][]int, len(gpus))
	for i, g := range gpus {
		if g.NVLinkPeers != "" && g.NVLinkPeers != "[]" {
			if err := json.Unmarshal([]byte(g.NVLinkPeers), &peers[i]); err != nil {
				return nil, nil, fmt.Errorf("NVLink peers of %s: %w", g.UUID, err)
			}
		}
	}
	c.read, c.version, c.gpus, c.peers = true, version, gpus, peers
	return gpus, peers, nil
}

// FleetGPUs returns every GPU of every node, removed ones too, by node id and index,
// with its MIG instances, as the scheduling passes have them: read again only when the
// GPU inventory changed. The answer is shared: callers must not change it.
func (s *Service) FleetGPUs(ctx context.Context) ([]store.FleetGPU, error) {
	gpus, _, err := s.inventory.fleet(ctx, s.store)
	return gpus, err
}
