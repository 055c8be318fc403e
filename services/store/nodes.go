package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// CreateNode inserts a node with its GPU devices in one transaction, raising the GPU
// inventory's version when it has some (GPUInventoryVersion); a taken name is ErrConflict.
func (s *Store) CreateNode(ctx context.Context, n *models.Node, devices []models.GPUDevice) error {
	err := s.InTx(ctx, func(tx *Store) error {
		if err := translate(tx.with(ctx).Create(n).Error); err != nil {
			return err
		}
		for i := range devices {
			devices[i].NodeID = n.ID
		}
		if len(devices) == 0 {
			return nil
		}
		if err := tx.raiseGPUInventory(ctx, n.ID); err != nil {
			return err
		}
		return translate(tx.with(ctx).Create(&devices).Error)
	})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	return nil
}

// NodeByName returns the node called name.
func (s *Store) NodeByName(ctx context.Context, name string) (*models.Node, error) {
	var n models.Node
	if err := translate(s.with(ctx).Where("name = ?", name).First(&n).Error); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	return &n, nil
}

// Nodes returns the nodes that were not removed, ordered by name: those that serve, or
// may serve again.
func (s *Store) Nodes(ctx context.Context) ([]models.Node, error) {
	out, err := s.nodeRows(ctx, nil, false, "name")
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}

// NodeFilter selects a page of nodes by name: those after After whose name holds Name
// (any letter case), whose state is one of States (any, when empty) and, when PoolID is
// not 0, in that pool; removed nodes only WithRemoved.
type NodeFilter struct {
	After       string
	Name        string
	States      []string
	PoolID      int64
	WithRemoved bool
	Limit       int
}

// NodesPage returns up to f.Limit nodes of f, ordered by name.
func (s *Store) NodesPage(ctx context.Context, f NodeFilter) ([]models.Node, error) {
	q := s.with(ctx).Order("name").Limit(f.Limit)
	if !f.WithRemoved {
		q = q.Where("removed_at IS NULL")
	}
	if f.After != "" {
		q = q.Where("name > ?", f.After)
	}
	if f.Name != "" {
		q = q.Where(`LOWER(name) LIKE ? ESCAPE '\'`, containing(f.Name))
	}
	if len(f.States) > 0 {
		q = q.Where("state IN ?", f.States)
	}
	if f.PoolID != 0 {
		q = q.Where("pool_id = ?", f.PoolID)
	}
	var out []models.Node
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list nodes after %q: %w", f.After, err)
	}
	return out, nil
}

// NodesWithRemoved returns every node, removed ones too, ordered by name.
func (s *Store) NodesWithRemoved(ctx context.Context) ([]models.Node, error) {
	out, err := s.nodeRows(ctx, nil, true, "name")
	if err != nil {
		return nil, fmt.Errorf("list nodes with the removed ones: %w", err)
	}
	return out, nil
}

// CountRemovedNodes returns how many nodes were removed.
func (s *Store) CountRemovedNodes(ctx context.Context) (int, error) {
	var n int64
	if err := s.with(ctx).Model(&models.Node{}).Where("removed_at IS NOT NULL").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count removed nodes: %w", err)
	}
	return int(n), nil
}

// DevicesOfNode returns a node's GPUs ordered by index.
func (s *Store) DevicesOfNode(ctx context.Context, nodeID int64) ([]models.GPUDevice, error) {
	var out []models.GPUDevice
	if err := s.with(ctx).Where("node_id = ?", nodeID).Order("idx").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("devices of node %d: %w", nodeID, err)
	}
	return out, nil
}

// CountNodes returns how many nodes are registered and not removed.
func (s *Store) CountNodes(ctx context.Context) (int, error) {
	var n int64
	if err := s.with(ctx).Model(&models.Node{}).Where("removed_at IS NULL").Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count nodes: %w", err)
	}
	return int(n), nil
}

// GPUModels returns the distinct GPU models of the fleet, by name.
func (s *Store) GPUModels(ctx context.Context) ([]string, error) {
	var out []string
	if err := s.with(ctx).Model(&models.GPUDevice{}).Distinct("model").Order("model").Pluck("model", &out).Error; err != nil {
		return nil, fmt.Errorf("GPU models: %w", err)
	}
	return out, nil
}

// NodePoolByID returns the pool with id.
func (s *Store) NodePoolByID(ctx context.Context, id int64) (*models.NodePool, error) {
	var p models.NodePool
	if err := translate(s.with(ctx).First(&p, id).Error); err != nil {
		return nil, fmt.Errorf("pool %d: %w", id, err)
	}
	return &p, nil
}
