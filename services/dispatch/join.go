package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
)

// JoinTokenSpec describes a join token to create.
type JoinTokenSpec struct {
	Name     string
	TTL      time.Duration
	Reusable bool
	PoolID   *int64
	// CreatedByID is the user who asked for it; nil for the server itself.
	CreatedByID *int64
}

// CreateJoinToken mints a join token, records it in the audit log as done by the
// actor of ctx, and returns it; only its hash is stored, so this is the one time
// it can be shown.
func CreateJoinToken(ctx context.Context, st *store.Store, log *audit.Log, now time.Time, spec JoinTokenSpec) (string, *models.JoinToken, error) {
	if spec.Name == "" || len(spec.Name) > 100 {
		return "", nil, models.Invalid("name", "is required (at most 100 characters)")
	}
	if spec.TTL <= 0 {
		return "", nil, models.Invalid("ttl", "must be positive, e.g. 24h")
	}
	secret := newSecret(joinTokenPrefix)
	t := &models.JoinToken{
		Name: spec.Name, Hash: hashSecret(secret), PoolID: spec.PoolID, Reusable: spec.Reusable,
		ExpiresAt: now.UTC().Add(spec.TTL), CreatedByID: spec.CreatedByID,
	}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateJoinToken(ctx, t); err != nil {
			return err
		}
		return log.In(tx).Append(ctx, audit.Entry{Action: "join_token.created", ObjectType: "join_token", ObjectID: t.Name,
			Detail: map[string]any{"reusable": t.Reusable, "expires_at": t.ExpiresAt}})
	})
	if err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// RevokeJoinToken revokes the join tokens called name, audited.
func RevokeJoinToken(ctx context.Context, st *store.Store, log *audit.Log, now time.Time, name string) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.RevokeJoinToken(ctx, name, now.UTC()); err != nil {
			return err
		}
		return log.In(tx).Append(ctx, audit.Entry{Action: "join_token.revoked", ObjectType: "join_token", ObjectID: name})
	})
}

// RevokeNodeCredential forgets the credential of node name, audited: its agent is
// refused from then on and must join again with a new join token.
func RevokeNodeCredential(ctx context.Context, st *store.Store, log *audit.Log, name string) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		n, err := tx.NodeByName(ctx, name)
		if err != nil {
			return err
		}
		n.CredentialHash = ""
		if err := tx.SaveNode(ctx, n); err != nil {
			return err
		}
		return log.In(tx).Append(ctx, audit.Entry{Action: "node.credential_revoked", ObjectType: "node", ObjectID: name})
	})
}

// Join registers the node of req, or registers it again under a new credential
// (an agent whose data dir was lost, or a removed node back in service), and returns
// the credential. An old registration's allocations end as lost: its agent is gone or
// replaced.
func (s *Service) Join(ctx context.Context, req agentapi.JoinRequest) (agentapi.JoinResponse, error) {
	if err := req.Validate(); err != nil {
		return agentapi.JoinResponse{}, err
	}
	credential := newSecret(credentialPrefix)
	now := s.now().UTC()
	ctx = asNode(ctx, req.Name)
	var node *models.Node
	var touched []int64
	action := "node.joined"
	detail := map[string]any{"gpus": len(req.Inventory.Devices), "simulated": req.Inventory.Simulated, "runtime": req.Runtime}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		tok, err := tx.JoinTokenByHash(ctx, hashSecret(req.JoinToken))
		switch {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("%w: unknown join token", ErrUnauthorized)
		case err != nil:
			return err
		case tok.RevokedAt != nil:
			return fmt.Errorf("%w: join token %q was revoked", ErrUnauthorized, tok.Name)
		case !now.Before(tok.ExpiresAt):
			return fmt.Errorf("%w: join token %q expired at %s", ErrUnauthorized, tok.Name, tok.ExpiresAt.Format(time.RFC3339))
		}
		if err := tx.UseJoinToken(ctx, tok.ID, now); errors.Is(err, store.ErrStale) {
			return fmt.Errorf("%w: join token %q was already used; create a reusable one for many nodes", ErrUnauthorized, tok.Name)
		} else if err != nil {
			return err
		}
		node, err = tx.NodeByName(ctx, req.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			node = &models.Node{Name: req.Name, PoolID: tok.PoolID, State: models.NodeReady, StateReason: "joined"}
		case err != nil:
			return err
		case node.Runtime == models.RuntimeSlurm:
			return models.Invalid("name", "node %s is a Slurm node, which Slurm owns; an agent must join under another name", node.Name)
		default:
			action = "node.rejoined"
			if touched, err = s.endAllocations(ctx, tx, node, "node-rejoined",
				fmt.Sprintf("node %s joined again with a new credential, so its earlier agent is gone", node.Name)); err != nil {
				return err
			}
			if node.State == models.NodeLost || node.State == models.NodeDown {
				node.State, node.StateReason = models.NodeReady, "joined again"
			}
			if node.RemovedAt != nil {
				detail["removed_at"] = node.RemovedAt.UTC()
				node.RemovedAt = nil
			}
		}
		applyRegistration(node, req, now)
		node.CredentialHash = hashSecret(credential)
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		devs, err := nodeDevices(req.Inventory)
		if err != nil {
			return err
		}
		if err := tx.ReplaceNodeDevices(ctx, node.ID, devs); err != nil {
			return err
		}
		detail["join_token"] = tok.Name
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "node", ObjectID: node.Name, Detail: detail})
	})
	if errors.Is(err, ErrUnauthorized) {
		s.auditRefusal(ctx, "node.join_refused", req.Name, err)
	}
	if err != nil {
		return agentapi.JoinResponse{}, fmt.Errorf("join node %s: %w", req.Name, err)
	}
	s.nodes.notify(touched...)
	if action == "node.rejoined" {
		s.signalEnded()
	}
	s.Kick()
	s.log.Info("node joined", "node", node.Name, "gpus", len(req.Inventory.Devices), "simulated", req.Inventory.Simulated)
	return agentapi.JoinResponse{NodeID: node.ID, Name: node.Name, Credential: credential, Timing: s.timing()}, nil
}

func (s *Service) timing() agentapi.Timing {
	return agentapi.Timing{
		HeartbeatIntervalMS: s.cfg.HeartbeatInterval.Milliseconds(),
		NodeTimeoutMS:       s.cfg.NodeTimeout.Milliseconds(),
		KillGraceMS:         s.cfg.KillGrace.Milliseconds(),
	}
}

func applyRegistration(n *models.Node, req agentapi.JoinRequest, now time.Time) {
	n.CPUMilli, n.MemoryMiB, n.ScratchMiB = req.CPUMilli, req.MemoryMiB, req.ScratchMiB
	n.Runtime = req.Runtime
	n.AgentVersion = req.AgentVersion
	n.DriverVersion, n.CUDAVersion = req.Inventory.DriverVersion, req.Inventory.CUDAVersion
	n.Simulated = req.Inventory.Simulated
	n.CCState = string(req.Inventory.ConfidentialCompute)
	if cc := req.Inventory.ConfidentialCompute; cc == gpu.CCOn || cc == gpu.CCOff {
		n.Confidential = cc == gpu.CCOn
	}
	n.LastHeartbeatAt = &now
}

// nodeDevices turns an agent's inventory into device and MIG instance rows.
func nodeDevices(inv gpu.Inventory) ([]store.NodeDevice, error) {
	out := make([]store.NodeDevice, 0, len(inv.Devices))
	for _, d := range inv.Devices {
		peers := make([]int, 0, len(d.NVLinkPeers))
		for _, p := range d.NVLinkPeers {
			peers = append(peers, p.Index)
		}
		pj, err := json.Marshal(peers)
		if err != nil {
			return nil, fmt.Errorf("encode NVLink peers of %s: %w", d.UUID, err)
		}
		// Only a GPU in MIG mode has instances; one said to have them is in MIG mode,
		// as the reads of instances (the cluster page, the scheduler's) take it.
		nd := store.NodeDevice{GPUDevice: models.GPUDevice{
			Index: d.Index, UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB,
			MIGEnabled: d.MIG == gpu.MIGEnabled || len(d.MIGInstances) > 0, NVLinkPeers: string(pj), PCIBusID: d.PCIBusID, Healthy: true,
		}}
		for _, m := range d.MIGInstances {
			nd.Slices = append(nd.Slices, models.GPUSlice{UUID: m.UUID, Profile: m.Profile, MemoryMiB: m.MemoryMiB, ComputeSlices: computeSlices(m.Profile)})
		}
		out = append(out, nd)
	}
	return out, nil
}

// computeSlices reads the compute slice count of a MIG profile: "3g.40gb" -> 3, "1c.3g.40gb" -> 1.
func computeSlices(profile string) int {
	n := 0
	for _, c := range profile {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
