package pools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode event detail: %w", err)
	}
	return string(b), nil
}

// CreateNodes asks the pool's provider for count machines, each with a one-use join
// token for a node name of its own. The requests are recorded before the provider is
// called, so a machine the provider makes is always one Gantry expects; what does not
// join within the boot timeout is deleted by Reconcile. The decision is recorded as a
// scale-up event with reason, audited as the actor of ctx.
func (s *Service) CreateNodes(ctx context.Context, p models.NodePool, count int, reason string, detail map[string]any) ([]models.PoolInstance, error) {
	if count <= 0 {
		return nil, nil
	}
	prov, err := s.providers(p)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(p.Template)
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	now := s.now().UTC()
	nodes := make([]NewNode, count)
	insts := make([]models.PoolInstance, count)
	for i := range count {
		name := newNodeName(p.Name)
		secret, tok, err := dispatch.CreateJoinToken(ctx, s.store, s.audit, now, dispatch.JoinTokenSpec{
			Name: "pool " + p.Name + " node " + name, TTL: s.cfg.BootTimeout, PoolID: &p.ID,
		})
		if err != nil {
			return nil, fmt.Errorf("join token for a node of pool %s: %w", p.Name, err)
		}
		nodes[i] = NewNode{Name: name, JoinToken: secret}
		insts[i] = models.PoolInstance{PoolID: p.ID, Name: name, State: models.InstanceRequested, JoinTokenID: &tok.ID, RequestedAt: now}
	}
	names := make([]string, count)
	for i := range insts {
		names[i] = insts[i].Name
	}
	d := map[string]any{"names": names}
	for k, v := range detail {
		d[k] = v
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		for i := range insts {
			if err := tx.CreatePoolInstance(ctx, &insts[i]); err != nil {
				return err
			}
		}
		return s.record(ctx, tx, p, models.PoolScaleUp, count, reason, d)
	})
	if err != nil {
		return nil, fmt.Errorf("record scale-up of pool %s: %w", p.Name, err)
	}
	got, err := prov.Create(ctx, CreateRequest{Pool: InfoOf(p, t), Server: s.cfg.Server, Nodes: nodes})
	if err != nil {
		// Some machines may exist all the same: Reconcile deletes whatever the
		// provider lists that is not expected, and these requests are not.
		s.failRequests(ctx, p, insts, err)
		return nil, err
	}
	ids := map[string]string{}
	for _, g := range got {
		ids[g.Name] = g.ProviderID
	}
	for i, in := range insts {
		pid, ok := ids[in.Name]
		if !ok || pid == "" {
			continue
		}
		if err := s.store.SetPoolInstanceState(ctx, in.ID, []string{models.InstanceRequested}, models.InstanceRequested, "created; waiting for its agent to join",
			store.InstanceChange{ProviderID: &pid}); err != nil && !errors.Is(err, store.ErrStale) {
			return nil, err
		}
		insts[i].ProviderID = pid
	}
	return insts, nil
}

// failRequests marks requests failed, revokes their join tokens and records why.
func (s *Service) failRequests(ctx context.Context, p models.NodePool, insts []models.PoolInstance, why error) {
	now := s.now().UTC()
	for _, in := range insts {
		if err := s.store.SetPoolInstanceState(ctx, in.ID, []string{models.InstanceRequested}, models.InstanceFailed, why.Error(),
			store.InstanceChange{DeletedAt: &now}); err != nil && !errors.Is(err, store.ErrStale) {
			s.log.Error("cannot mark a failed node request", "pool", p.Name, "node", in.Name, "err", err)
		}
		s.revokeToken(ctx, p, in.Name)
	}
	if err := s.Record(ctx, p, models.PoolFailed, len(insts), "the provider could not create the nodes: "+why.Error(), nil); err != nil {
		s.log.Error("cannot record a failed scale-up", "pool", p.Name, "err", err)
	}
}

func (s *Service) revokeToken(ctx context.Context, p models.NodePool, node string) {
	err := dispatch.RevokeJoinToken(ctx, s.store, s.audit, s.now(), "pool "+p.Name+" node "+node)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("cannot revoke the join token of a node request", "pool", p.Name, "node", node, "err", err)
	}
}

// RetireNode starts scaling a node of the pool down: it takes no new work (cordoned,
// or draining with a deadline of stopAfter when the pool lets scale-down
// checkpoint-stop what runs), and Reconcile deletes its machine once nothing runs there.
func (s *Service) RetireNode(ctx context.Context, p models.NodePool, node string, reason string, stopAfter time.Duration) error {
	inst, err := s.instanceOfNode(ctx, p, node)
	if err != nil {
		return err
	}
	state, deadline := models.NodeCordoned, time.Time{}
	if p.DrainStopsJobs {
		state, deadline = models.NodeDraining, s.now().UTC().Add(stopAfter)
	}
	if _, err := s.fleet.SetNodeState(ctx, node, state, "scaling down: "+reason, deadline); err != nil {
		return fmt.Errorf("retire node %s: %w", node, err)
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.SetPoolInstanceState(ctx, inst.ID, []string{models.InstanceRunning, models.InstanceRequested}, models.InstanceDeleting, reason, store.InstanceChange{}); err != nil {
			return err
		}
		return s.record(ctx, tx, p, models.PoolScaleDown, 1, reason, map[string]any{"node": node, "then": state})
	})
}

// reclaimedPrefix starts the reason of a machine its provider takes away.
const reclaimedPrefix = "reclaimed by its provider: "

// markReclaimed records that a machine's provider is taking it away: it is not
// counted as capacity any more, and Reconcile deletes it once its jobs moved off.
func (s *Service) markReclaimed(ctx context.Context, p models.NodePool, in models.PoolInstance, why string) error {
	reason := reclaimedPrefix + why
	return s.store.InTx(ctx, func(tx *store.Store) error {
		err := tx.SetPoolInstanceState(ctx, in.ID, []string{models.InstanceRunning, models.InstanceRequested}, models.InstanceDeleting, reason, store.InstanceChange{})
		if errors.Is(err, store.ErrStale) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.record(ctx, tx, p, models.PoolReclaim, 1, fmt.Sprintf("node %s: %s; its jobs checkpoint and move to other nodes", in.Name, reason),
			map[string]any{"node": in.Name})
	})
}

func (s *Service) instanceOfNode(ctx context.Context, p models.NodePool, node string) (*models.PoolInstance, error) {
	insts, err := s.store.PoolInstances(ctx, p.ID, models.InstanceRunning, models.InstanceRequested)
	if err != nil {
		return nil, err
	}
	for i := range insts {
		if insts[i].Name == node {
			return &insts[i], nil
		}
	}
	return nil, models.Invalid("node", "node %s is not a machine pool %s created; only those are scaled down", node, p.Name)
}
