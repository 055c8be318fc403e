package pools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

// ReconcileReport says what one reconciliation of a pool did.
type ReconcileReport struct {
	Joined    []string // requests whose agent joined
	Leaked    []string // machines nobody expects, deleted
	TimedOut  []string // requests that never joined, deleted
	Vanished  []string // machines the provider no longer lists
	Deleted   []string // retired nodes whose machine was deleted
	Reclaimed []string // nodes the provider announced it will reclaim
	Removed   []string // nodes an admin removed, whose machine was deleted
}

// Reconcile compares the provider's list of the pool's machines with what Gantry asked
// for: a machine nobody expects is deleted (so none leaks and runs up a bill), a
// request whose agent never joined within the boot timeout is deleted and counted
// failed, a retired node with nothing left running is deleted, so is the machine of a
// node an admin removed (its credential is gone: it could never serve again, only
// bill), a machine the provider no longer lists is forgotten, and one the provider says
// it will reclaim is handed to dispatch to checkpoint and requeue its jobs. Static
// pools have nothing to reconcile.
func (s *Service) Reconcile(ctx context.Context, p models.NodePool) (ReconcileReport, error) {
	var rep ReconcileReport
	if p.Provider != ProviderExec {
		return rep, nil
	}
	prov, err := s.providers(p)
	if err != nil {
		return rep, err
	}
	t, err := ParseTemplate(p.Template)
	if err != nil {
		return rep, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	info := InfoOf(p, t)
	listed, err := prov.List(ctx, info)
	if err != nil {
		return rep, fmt.Errorf("reconcile pool %s: %w", p.Name, err)
	}
	live, err := s.store.PoolInstances(ctx, p.ID, models.InstanceRequested, models.InstanceRunning, models.InstanceDeleting)
	if err != nil {
		return rep, err
	}
	nodes, err := s.store.NodesOfPool(ctx, p.ID)
	if err != nil {
		return rep, err
	}
	nodeByName := map[string]*models.Node{}
	ids := make([]int64, 0, len(nodes))
	for i := range nodes {
		nodeByName[nodes[i].Name] = &nodes[i]
		ids = append(ids, nodes[i].ID)
	}
	lastBusy, err := s.store.NodesLastBusy(ctx, ids)
	if err != nil {
		return rep, err
	}
	expected := map[string]*models.PoolInstance{}
	for i := range live {
		expected[live[i].Name] = &live[i]
	}
	now := s.now().UTC()
	seen := map[string]bool{}
	var leaked []Instance
	var remove []doomed
	for _, l := range listed {
		seen[l.Name] = true
		in, ok := expected[l.Name]
		if !ok {
			leaked = append(leaked, l)
			continue
		}
		n := nodeByName[l.Name]
		if n != nil && n.RemovedAt != nil && in.State != models.InstanceDeleting {
			remove = append(remove, doomed{l, in, models.InstanceDeleted, removedBecause(n)})
			rep.Removed = append(rep.Removed, in.Name)
			continue
		}
		if l.Interruption != nil && n != nil {
			if err := s.fleet.Reclaim(ctx, n.Name, l.Interruption.Deadline, "the provider reports: "+orDefault(l.Interruption.Reason, "spot interruption")); err != nil {
				s.log.Error("cannot reclaim a node the provider interrupts", "pool", p.Name, "node", n.Name, "err", err)
			} else {
				rep.Reclaimed = append(rep.Reclaimed, n.Name)
			}
		}
		switch in.State {
		case models.InstanceRequested:
			if n != nil {
				at := now
				if n.CreatedAt.After(in.RequestedAt) {
					at = n.CreatedAt.UTC()
				}
				if err := s.store.SetPoolInstanceState(ctx, in.ID, []string{models.InstanceRequested}, models.InstanceRunning, "its agent joined",
					store.InstanceChange{JoinedAt: &at, ProviderID: nonEmpty(l.ProviderID)}); err != nil && !errors.Is(err, store.ErrStale) {
					return rep, err
				}
				rep.Joined = append(rep.Joined, in.Name)
			} else if now.Sub(in.RequestedAt) >= s.cfg.BootTimeout {
				remove = append(remove, doomed{l, in, models.InstanceFailed, fmt.Sprintf("its agent did not join within %s: deleted", s.cfg.BootTimeout)})
				rep.TimedOut = append(rep.TimedOut, in.Name)
			}
		case models.InstanceDeleting:
			if n == nil || n.State == models.NodeLost || n.State == models.NodeDown || quiet(lastBusy, n.ID) {
				remove = append(remove, doomed{l, in, models.InstanceDeleted, retiredBecause(*in)})
				rep.Deleted = append(rep.Deleted, in.Name)
			}
		}
	}
	if err := s.deleteLeaked(ctx, p, info, prov, leaked, &rep); err != nil {
		return rep, err
	}
	if err := s.deleteMachines(ctx, p, info, prov, remove, nodeByName); err != nil {
		return rep, err
	}
	for _, in := range live {
		if seen[in.Name] || now.Sub(in.RequestedAt) < s.cfg.ListGrace {
			continue
		}
		if err := s.forget(ctx, p, in, nodeByName[in.Name]); err != nil {
			return rep, err
		}
		rep.Vanished = append(rep.Vanished, in.Name)
	}
	return rep, nil
}

// retiredBecause says why a deleting machine went: scaled down, or reclaimed.
func retiredBecause(in models.PoolInstance) string {
	if strings.HasPrefix(in.StateReason, reclaimedPrefix) {
		return in.StateReason
	}
	return "scaled down: " + in.StateReason
}

// removedBecause says why a removed node's machine goes, with the reason the node
// keeps from its removal ("removed by ada").
func removedBecause(n *models.Node) string {
	if strings.HasPrefix(n.StateReason, "removed ") {
		return "node " + n.StateReason + ": deleted"
	}
	return "node removed (" + n.StateReason + "): deleted"
}

// quiet reports whether nothing runs on the node now.
func quiet(lastBusy map[int64]time.Time, node int64) bool {
	t, ok := lastBusy[node]
	return !ok || !t.IsZero()
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// deleteLeaked deletes machines the provider runs for the pool that Gantry does not expect.
func (s *Service) deleteLeaked(ctx context.Context, p models.NodePool, info PoolInfo, prov Provider, leaked []Instance, rep *ReconcileReport) error {
	if len(leaked) == 0 {
		return nil
	}
	names := make([]string, len(leaked))
	for i, l := range leaked {
		names[i] = l.Name
	}
	slices.Sort(names)
	if err := prov.Delete(ctx, info, leaked); err != nil {
		_ = s.Record(ctx, p, models.PoolFailed, len(leaked), "cannot delete machines Gantry did not ask for: "+err.Error(), map[string]any{"names": names})
		return fmt.Errorf("delete leaked machines of pool %s: %w", p.Name, err)
	}
	rep.Leaked = names
	return s.Record(ctx, p, models.PoolReconcile, len(leaked),
		fmt.Sprintf("the provider ran %s that Gantry did not ask for or had given up on: deleted", strings.Join(names, ", ")), map[string]any{"names": names})
}

// doomed is a machine Reconcile deletes, the state its row ends in and why.
type doomed struct {
	machine Instance
	row     *models.PoolInstance
	final   string
	reason  string
}

// deleteMachines deletes retired nodes, removed nodes and requests that never joined,
// then marks their rows, nodes and join tokens done.
func (s *Service) deleteMachines(ctx context.Context, p models.NodePool, info PoolInfo, prov Provider, remove []doomed, nodes map[string]*models.Node) error {
	if len(remove) == 0 {
		return nil
	}
	machines := make([]Instance, len(remove))
	for i, d := range remove {
		machines[i] = d.machine
	}
	if err := prov.Delete(ctx, info, machines); err != nil {
		_ = s.Record(ctx, p, models.PoolFailed, len(remove), "cannot delete machines: "+err.Error(), nil)
		return fmt.Errorf("delete machines of pool %s: %w", p.Name, err)
	}
	now := s.now().UTC()
	for _, d := range remove {
		in, final, reason := d.row, d.final, d.reason
		if final == models.InstanceFailed {
			s.revokeToken(ctx, p, in.Name)
		}
		err := s.store.SetPoolInstanceState(ctx, in.ID, []string{in.State}, final, reason, store.InstanceChange{DeletedAt: &now})
		if err != nil && !errors.Is(err, store.ErrStale) {
			return err
		}
		if n := nodes[in.Name]; n != nil {
			s.retireNodeRecord(ctx, n, "its machine was deleted ("+reason+")")
		}
		kind := models.PoolDeleted
		if final == models.InstanceFailed {
			kind = models.PoolFailed
		}
		if err := s.Record(ctx, p, kind, 1, fmt.Sprintf("node %s: %s", in.Name, reason), map[string]any{"node": in.Name}); err != nil {
			return err
		}
	}
	return nil
}

// forget records that the provider no longer lists a machine.
func (s *Service) forget(ctx context.Context, p models.NodePool, in models.PoolInstance, n *models.Node) error {
	now := s.now().UTC()
	final, reason := models.InstanceFailed, "the provider no longer lists it"
	if in.State == models.InstanceDeleting {
		final, reason = models.InstanceDeleted, retiredBecause(in)
	}
	err := s.store.SetPoolInstanceState(ctx, in.ID, []string{in.State}, final, reason, store.InstanceChange{DeletedAt: &now})
	if err != nil && !errors.Is(err, store.ErrStale) {
		return err
	}
	if in.State == models.InstanceRequested {
		s.revokeToken(ctx, p, in.Name)
	}
	if n != nil && in.State == models.InstanceDeleting {
		s.retireNodeRecord(ctx, n, "its machine is gone ("+reason+")")
	}
	kind := models.PoolReconcile
	if final == models.InstanceDeleted {
		kind = models.PoolDeleted
	}
	// A running node that vanished is left to liveness: it goes silent, is lost, and
	// its jobs are requeued.
	return s.Record(ctx, p, kind, 1, fmt.Sprintf("node %s: %s", in.Name, reason), map[string]any{"node": in.Name})
}

// retireNodeRecord takes a deleted machine's node out of service for good: removed,
// so it is down, its credential forgotten so that nothing can speak for it again, and
// node lists leave it out. Should dispatch refuse (work still runs there), the
// credential is forgotten all the same.
func (s *Service) retireNodeRecord(ctx context.Context, n *models.Node, reason string) {
	if n.RemovedAt != nil {
		return
	}
	_, err := s.fleet.RemoveNode(ctx, n.Name, reason)
	if err == nil {
		return
	}
	s.log.Warn("cannot mark a deleted machine's node removed", "node", n.Name, "err", err)
	if err := dispatch.RevokeNodeCredential(ctx, s.store, s.audit, n.Name); err != nil {
		s.log.Error("cannot revoke a deleted machine's node credential", "node", n.Name, "err", err)
	}
}
