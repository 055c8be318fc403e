package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// NodeDevice is a GPU of a node with its MIG instances, as an agent reports them.
type NodeDevice struct {
	models.GPUDevice
	Slices []models.GPUSlice
}

// NodeByID returns the node with id.
func (s *Store) NodeByID(ctx context.Context, id int64) (*models.Node, error) {
	var n models.Node
	if err := translate(s.with(ctx).First(&n, id).Error); err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	return &n, nil
}

// NodeByCredentialHash returns the node whose agent credential hashes to hash.
func (s *Store) NodeByCredentialHash(ctx context.Context, hash string) (*models.Node, error) {
	var n models.Node
	if hash == "" {
		return nil, fmt.Errorf("node by credential: %w", ErrNotFound)
	}
	if err := translate(s.read(ctx).Where("credential_hash = ?", hash).First(&n).Error); err != nil {
		return nil, fmt.Errorf("node by credential: %w", err)
	}
	return &n, nil
}

// SaveNode writes every field of n (registration, inventory, credential).
func (s *Store) SaveNode(ctx context.Context, n *models.Node) error {
	if err := translate(s.with(ctx).Save(n).Error); err != nil {
		return fmt.Errorf("save node %s: %w", n.Name, err)
	}
	return nil
}

// ReplaceNodeDevices makes devs the node's GPUs and MIG instances, replacing what it had,
// and raises the GPU inventory's version (GPUInventoryVersion). A UUID registered to
// another node is ErrConflict.
func (s *Store) ReplaceNodeDevices(ctx context.Context, nodeID int64, devs []NodeDevice) error {
	err := s.InTx(ctx, func(tx *Store) error {
		old := tx.with(ctx).Model(&models.GPUDevice{}).Select("id").Where("node_id = ?", nodeID)
		if err := tx.with(ctx).Where("device_id IN (?)", old).Delete(&models.GPUSlice{}).Error; err != nil {
			return err
		}
		if err := tx.with(ctx).Where("node_id = ?", nodeID).Delete(&models.GPUDevice{}).Error; err != nil {
			return err
		}
		if err := tx.raiseGPUInventory(ctx, nodeID); err != nil {
			return err
		}
		for i := range devs {
			d := devs[i].GPUDevice
			d.ID, d.NodeID = 0, nodeID
			if err := translate(tx.with(ctx).Create(&d).Error); err != nil {
				return err
			}
			for _, sl := range devs[i].Slices {
				sl.ID, sl.DeviceID = 0, d.ID
				if err := translate(tx.with(ctx).Create(&sl).Error); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace devices of node %d: %w", nodeID, err)
	}
	return nil
}

// SlicesOfNode returns the MIG instances of a node's GPUs.
func (s *Store) SlicesOfNode(ctx context.Context, nodeID int64) ([]models.GPUSlice, error) {
	var out []models.GPUSlice
	devs := s.with(ctx).Model(&models.GPUDevice{}).Select("id").Where("node_id = ?", nodeID)
	if err := s.with(ctx).Where("device_id IN (?)", devs).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("MIG instances of node %d: %w", nodeID, err)
	}
	return out, nil
}

// RecordHeartbeat stamps the node's last heartbeat.
func (s *Store) RecordHeartbeat(ctx context.Context, nodeID int64, at time.Time) error {
	err := s.with(ctx).Model(&models.Node{}).Where("id = ?", nodeID).
		Updates(map[string]any{"last_heartbeat_at": at, "updated_at": at}).Error
	if err != nil {
		return fmt.Errorf("record heartbeat of node %d: %w", nodeID, err)
	}
	return nil
}

// SetNodeState moves node id to state `to` if it is in one of from; otherwise ErrStale.
func (s *Store) SetNodeState(ctx context.Context, id int64, from []string, to, reason string) error {
	res := s.with(ctx).Model(&models.Node{}).Where("id = ? AND state IN ?", id, from).
		Updates(map[string]any{"state": to, "state_reason": reason, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("set node %d %s: %w", id, to, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("set node %d %s: %w: node is not in %v", id, to, ErrStale, from)
	}
	return nil
}

// NodesSilentSince returns the agents' nodes in one of states whose last heartbeat
// is before `before` (or that never sent one and registered before it). Slurm's
// nodes never heartbeat: Slurm owns their health.
func (s *Store) NodesSilentSince(ctx context.Context, before time.Time, states []string) ([]models.Node, error) {
	var out []models.Node
	err := s.with(ctx).Where("state IN ? AND runtime <> ? AND COALESCE(last_heartbeat_at, created_at) < ?", states, models.RuntimeSlurm, before).
		Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("silent nodes: %w", err)
	}
	return out, nil
}

// NodesInStates returns the nodes in one of states (removed ones too), by id.
func (s *Store) NodesInStates(ctx context.Context, states []string) ([]models.Node, error) {
	if len(states) == 0 {
		return nil, nil
	}
	out, err := s.nodeRows(ctx, states, true, "id")
	if err != nil {
		return nil, fmt.Errorf("nodes in %v: %w", states, err)
	}
	return out, nil
}

// DevicesOfNodes returns the GPUs of the given nodes, by node then index.
func (s *Store) DevicesOfNodes(ctx context.Context, nodeIDs []int64) ([]models.GPUDevice, error) {
	var out []models.GPUDevice
	if len(nodeIDs) == 0 {
		return nil, nil
	}
	err := inBatches(nodeIDs, func(batch []int64) error {
		var devs []models.GPUDevice
		err := s.with(ctx).Where("node_id IN ?", batch).Order("node_id, idx").Find(&devs).Error
		out = append(out, devs...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("devices of %d nodes: %w", len(nodeIDs), err)
	}
	return out, nil
}

// MarkNodeLost moves node id to lost if it is in one of from and still silent
// since before; otherwise ErrStale (a heartbeat came in meanwhile).
func (s *Store) MarkNodeLost(ctx context.Context, id int64, from []string, before time.Time, reason string) error {
	res := s.with(ctx).Model(&models.Node{}).
		Where("id = ? AND state IN ? AND COALESCE(last_heartbeat_at, created_at) < ?", id, from, before).
		Updates(map[string]any{"state": models.NodeLost, "state_reason": reason, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("mark node %d lost: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("mark node %d lost: %w: it spoke or changed state meanwhile", id, ErrStale)
	}
	return nil
}

// SlicesOfDevices returns the MIG instances of the given GPUs.
func (s *Store) SlicesOfDevices(ctx context.Context, deviceIDs []int64) ([]models.GPUSlice, error) {
	if len(deviceIDs) == 0 {
		return nil, nil
	}
	var out []models.GPUSlice
	err := inBatches(deviceIDs, func(batch []int64) error {
		var sl []models.GPUSlice
		err := s.with(ctx).Where("device_id IN ?", batch).Order("device_id, id").Find(&sl).Error
		out = append(out, sl...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("MIG instances of %d GPUs: %w", len(deviceIDs), err)
	}
	return out, nil
}
