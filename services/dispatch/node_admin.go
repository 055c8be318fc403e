package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
)

var (
	labelKeyRE   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^[A-Za-z0-9._/: -]{0,63}$`)
)

// maxLabels bounds how many labels a node carries.
const maxLabels = 64

// SetNodeLabels replaces the labels of node name, audited with what they were. Jobs
// select nodes by labels; pools set some of their own when they start a node.
func (s *Service) SetNodeLabels(ctx context.Context, name string, labels map[string]string) (*models.Node, error) {
	if len(labels) > maxLabels {
		return nil, models.Invalid("labels", "%d labels is more than the %d a node may carry", len(labels), maxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case !labelKeyRE.MatchString(k):
			return nil, models.Invalid("labels", "%q is not a label key: use letters, digits, '.', '_', '/' and '-' (1-63), starting and ending with a letter or digit", k)
		case !labelValueRE.MatchString(labels[k]):
			return nil, models.Invalid("labels", "the value of %s is not a label value: at most 63 letters, digits, spaces and . _ / : -", k)
		}
	}
	encoded, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	var node *models.Node
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if node, err = tx.NodeByName(ctx, name); err != nil {
			return err
		}
		if err := notSlurm(node, "labels"); err != nil {
			return err
		}
		before := node.Labels
		if before == string(encoded) {
			return nil
		}
		if err := tx.SetNodeLabels(ctx, node.ID, string(encoded)); err != nil {
			return err
		}
		node.Labels = string(encoded)
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.labels_changed", ObjectType: "node", ObjectID: name,
			Detail: map[string]any{"from": json.RawMessage(orEmptyObject(before)), "to": labels}})
	})
	if err != nil {
		return nil, fmt.Errorf("set the labels of node %s: %w", name, err)
	}
	s.Kick()
	return node, nil
}

// SetNodePool moves node name into pool ("" for none), audited.
func (s *Service) SetNodePool(ctx context.Context, name, pool string) (*models.Node, error) {
	var node *models.Node
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if node, err = tx.NodeByName(ctx, name); err != nil {
			return err
		}
		if err := notSlurm(node, "pool"); err != nil {
			return err
		}
		var to *int64
		if pool != "" {
			p, err := tx.NodePoolByName(ctx, pool)
			if errors.Is(err, store.ErrNotFound) {
				return models.Invalid("pool", "there is no pool %q", pool)
			} else if err != nil {
				return err
			}
			to = &p.ID
		}
		if samePool(node.PoolID, to) {
			return nil
		}
		from := ""
		if node.PoolID != nil {
			if p, err := tx.NodePoolByID(ctx, *node.PoolID); err == nil {
				from = p.Name
			}
		}
		node.PoolID = to
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.pool_changed", ObjectType: "node", ObjectID: name,
			Detail: map[string]string{"from": from, "to": pool}})
	})
	if err != nil {
		return nil, fmt.Errorf("move node %s to pool %q: %w", name, pool, err)
	}
	s.Kick()
	return node, nil
}

// RemoveNode takes node name out of service for good, audited: it goes down (refused
// while anything runs there: drain it first), its agent's credential is forgotten, so
// the machine comes back only by joining again with a new join token, and it is marked
// removed, so node lists leave it out unless asked. Its history (allocations, costs,
// telemetry) stays.
func (s *Service) RemoveNode(ctx context.Context, name, reason string) (*models.Node, error) {
	now := s.now().UTC()
	var node *models.Node
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if node, err = tx.NodeByName(ctx, name); err != nil {
			return err
		}
		if err := notSlurm(node, "node"); err != nil {
			return err
		}
		if err := notRemoved(node, "node"); err != nil {
			return err
		}
		active, err := tx.ActiveAllocations(ctx, node.ID)
		if err != nil {
			return err
		}
		if len(active) > 0 {
			return models.Invalid("node", "node %s still runs %d allocations: drain it first", name, len(active))
		}
		from := node.State
		node.State, node.StateReason, node.DrainDeadline, node.CredentialHash = models.NodeDown, reason, nil, ""
		node.RemovedAt = &now
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.removed", ObjectType: "node", ObjectID: name,
			Detail: map[string]string{"from": from, "reason": reason}})
	})
	if err != nil {
		return nil, fmt.Errorf("remove node %s: %w", name, err)
	}
	return node, nil
}

// notSlurm refuses to change a Slurm node, which its pool's inventory owns: Slurm
// says what it is and where, and Gantry shows it.
func notSlurm(node *models.Node, field string) error {
	if node.Runtime == models.RuntimeSlurm {
		return models.Invalid(field, "node %s is a Slurm node: Slurm owns it (scontrol update nodename=…), and Gantry shows it as Slurm reports it", node.Name)
	}
	return nil
}

// notRemoved refuses to put a removed node back into service or remove it again: its
// credential is gone, so only its agent joining again with a new join token brings it
// back.
func notRemoved(node *models.Node, field string) error {
	if node.RemovedAt != nil {
		return models.Invalid(field, "node %s was removed on %s UTC: it comes back only when its agent joins again with a new join token",
			node.Name, node.RemovedAt.UTC().Format(time.DateTime))
	}
	return nil
}

// SetNodeConfidential flags node name as running confidential computing, or not, for a
// node whose NVML cannot tell; where NVML reports the mode, it decides. Audited.
func (s *Service) SetNodeConfidential(ctx context.Context, name string, on bool) (*models.Node, error) {
	var node *models.Node
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if node, err = tx.NodeByName(ctx, name); err != nil {
			return err
		}
		if err := notSlurm(node, "confidential"); err != nil {
			return err
		}
		if node.CCState == string(gpu.CCOn) || node.CCState == string(gpu.CCOff) {
			return models.Invalid("confidential", "NVML reports confidential computing %s on %s, and it decides: the flag is for nodes whose GPUs cannot tell", node.CCState, name)
		}
		if node.Confidential == on {
			return nil
		}
		node.Confidential = on
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.confidential_flagged", ObjectType: "node", ObjectID: name,
			Detail: map[string]bool{"confidential": on}})
	})
	if err != nil {
		return nil, fmt.Errorf("flag node %s confidential: %w", name, err)
	}
	s.Kick()
	return node, nil
}

func samePool(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func orEmptyObject(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}
