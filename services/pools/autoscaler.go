package pools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/pools/autoscale"
)

// Snapshotter gives the cluster as the next scheduling pass sees it; dispatch implements it.
type Snapshotter interface {
	Snapshot(ctx context.Context) (dispatch.Snapshot, error)
}

// Budgets says where teams stand against their monthly budgets; accounting implements it.
type Budgets interface {
	BudgetStatuses(ctx context.Context, now time.Time, burnWindow time.Duration) ([]accounting.BudgetStatus, error)
}

// LoopConfig holds the autoscaler loop's timings.
type LoopConfig struct {
	// Every is how often the autoscaler decides.
	Every time.Duration
	// ReconcileEvery is how often each exec pool's provider list is reconciled.
	ReconcileEvery time.Duration
	// SampleEvery is how often node counts and demand are sampled for the pool page.
	SampleEvery time.Duration
	// SampleRetention is how long samples are kept.
	SampleRetention time.Duration
	// DrainGrace is how long a node being scaled down gives what still runs there
	// before it is checkpoint-stopped, in pools that allow it.
	DrainGrace time.Duration
}

// DefaultLoopConfig is what `gantry serve` runs unless told otherwise.
func DefaultLoopConfig() LoopConfig {
	return LoopConfig{Every: 10 * time.Second, ReconcileEvery: 30 * time.Second, SampleEvery: time.Minute,
		SampleRetention: 30 * 24 * time.Hour, DrainGrace: 5 * time.Minute}
}

// Autoscaler is the leader's loop that grows and shrinks pools: it asks
// autoscale.Decide and gives the decision effect through the Service.
type Autoscaler struct {
	svc     *Service
	decider *autoscale.Autoscaler
	snap    Snapshotter
	budgets Budgets
	cfg     LoopConfig

	mu            sync.Mutex
	lastReconcile map[int64]time.Time
	lastSample    time.Time
	lastHeld      map[string]string
}

// NewAutoscaler returns the loop; budgets may be nil (no team is held back for cost).
func NewAutoscaler(svc *Service, decider *autoscale.Autoscaler, snap Snapshotter, budgets Budgets, cfg LoopConfig) (*Autoscaler, error) {
	if svc == nil || decider == nil || snap == nil {
		return nil, errors.New("the autoscaler needs the pools service, a decider and a snapshot source")
	}
	if cfg.Every <= 0 || cfg.ReconcileEvery <= 0 || cfg.SampleEvery <= 0 || cfg.SampleRetention <= 0 || cfg.DrainGrace < 0 {
		return nil, errors.New("autoscaler timings must be positive")
	}
	return &Autoscaler{svc: svc, decider: decider, snap: snap, budgets: budgets, cfg: cfg,
		lastReconcile: map[int64]time.Time{}, lastHeld: map[string]string{}}, nil
}

// Run decides every cfg.Every until ctx ends; errors are logged and retried.
func (a *Autoscaler) Run(ctx context.Context) {
	ctx = audit.WithActor(ctx, audit.Actor{Name: "autoscaler", Type: models.ActorSystem})
	t := time.NewTicker(a.cfg.Every)
	defer t.Stop()
	for {
		if err := a.Tick(ctx); err != nil && ctx.Err() == nil {
			a.svc.log.Error("autoscaler pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poolState is one pool as a pass reads it.
type poolState struct {
	pool      models.NodePool
	template  Template
	nodes     map[string]string // scheduler id -> node name
	instances []models.PoolInstance
}

// Tick runs one pass: reconcile what is due, label nodes, decide, act, sample.
func (a *Autoscaler) Tick(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.svc.store
	list, err := st.NodePools(ctx)
	if err != nil || len(list) == 0 {
		return err
	}
	now := a.svc.now().UTC()
	for _, p := range list {
		if p.Provider == ProviderExec && now.Sub(a.lastReconcile[p.ID]) >= a.cfg.ReconcileEvery {
			a.lastReconcile[p.ID] = now
			if _, err := a.svc.Reconcile(ctx, p); err != nil {
				a.svc.log.Warn("cannot reconcile a pool with its provider; retrying next pass", "pool", p.Name, "err", err)
			}
		}
	}
	in, states, err := a.input(ctx, list, now)
	if err != nil {
		return err
	}
	d, err := a.decider.Decide(in)
	if err != nil {
		return err
	}
	a.act(ctx, d, states)
	if now.Sub(a.lastSample) >= a.cfg.SampleEvery {
		a.lastSample = now
		return a.sample(ctx, now, in, d, states)
	}
	return nil
}

// input reads pools, nodes, machines, prices, budgets and the queue for a decision.
func (a *Autoscaler) input(ctx context.Context, list []models.NodePool, now time.Time) (autoscale.Input, map[string]*poolState, error) {
	st := a.svc.store
	in := autoscale.Input{Now: now}
	snap, err := a.snap.Snapshot(ctx)
	if err != nil {
		return in, nil, fmt.Errorf("snapshot: %w", err)
	}
	in.Snapshot = dispatch.SchedulerSnapshot(snap)
	rates, err := st.CostRates(ctx)
	if err != nil {
		return in, nil, err
	}
	prices := accounting.NewPrices(rates)
	lastUp, err := st.LastPoolRequests(ctx)
	if err != nil {
		return in, nil, err
	}
	if in.Budgets, err = a.teamBudgets(ctx, now); err != nil {
		return in, nil, err
	}
	states := map[string]*poolState{}
	for _, p := range list {
		if p.Provider == ProviderSlurm {
			continue
		}
		t, err := ParseTemplate(p.Template)
		if err != nil {
			return in, nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		ps := &poolState{pool: p, template: t, nodes: map[string]string{}}
		ap, err := a.poolInput(ctx, ps, prices, now)
		if err != nil {
			return in, nil, err
		}
		ap.LastScaleUp = lastUp[p.ID]
		states[p.Name] = ps
		in.Pools = append(in.Pools, ap)
	}
	return in, states, nil
}

// poolInput is one pool as the decider sees it, and labels its nodes on the way.
func (a *Autoscaler) poolInput(ctx context.Context, ps *poolState, prices accounting.Prices, now time.Time) (autoscale.Pool, error) {
	st := a.svc.store
	p, t := ps.pool, ps.template
	labels := NodeLabels(p, t)
	tmpl := TemplateNode(p, t)
	tmpl.PriceMicros = prices.NodeHour(now, accounting.Machine{PoolID: p.ID, Capacity: p.CapacityType, GPUModel: t.GPUModel, GPUs: t.GPUs,
		CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB})
	ap := autoscale.Pool{Name: p.Name, Template: tmpl, Min: p.MinNodes, Max: p.MaxNodes, Scalable: p.Provider == ProviderExec,
		IdleTimeout: time.Duration(p.IdleTimeoutSec) * time.Second}
	var err error
	if ps.instances, err = st.PoolInstances(ctx, p.ID, models.InstanceRequested, models.InstanceRunning, models.InstanceDeleting); err != nil {
		return ap, err
	}
	inst := map[string]models.PoolInstance{}
	for _, in := range ps.instances {
		inst[in.Name] = in
	}
	nodes, err := st.NodesOfPool(ctx, p.ID)
	if err != nil {
		return ap, err
	}
	ids := make([]int64, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	lastBusy, err := st.NodesLastBusy(ctx, ids)
	if err != nil {
		return ap, err
	}
	want, err := json.Marshal(labels)
	if err != nil {
		return ap, err
	}
	joined := map[string]bool{}
	for _, n := range nodes {
		joined[n.Name] = true
		if n.State != models.NodeReady && n.State != models.NodeCordoned && n.State != models.NodeDraining {
			continue
		}
		if err := a.label(ctx, n, labels, string(want)); err != nil {
			return ap, err
		}
		id := strconv.FormatInt(n.ID, 10)
		ps.nodes[id] = n.Name
		an := autoscale.Node{ID: id}
		in, created := inst[n.Name]
		if why, ok := dispatch.Reclaimed(n); ok && created && in.State != models.InstanceDeleting {
			if err := a.svc.markReclaimed(ctx, p, in, why); err != nil {
				return ap, err
			}
			in.State = models.InstanceDeleting
		}
		switch {
		case created && in.State == models.InstanceDeleting:
			an.Retiring = true
		case !created:
			// Joined by hand: the autoscaler did not create it and does not delete it.
		default:
			if last, ok := lastBusy[n.ID]; !ok {
				an.IdleSince = n.CreatedAt.UTC()
			} else if !last.IsZero() {
				an.IdleSince = last
			}
		}
		ap.Nodes = append(ap.Nodes, an)
	}
	for _, in := range ps.instances {
		if in.State == models.InstanceRequested && !joined[in.Name] {
			ap.Booting++
		}
	}
	return ap, nil
}

// label gives a node its pool's labels when they differ, keeping labels of its own.
func (a *Autoscaler) label(ctx context.Context, n models.Node, labels map[string]string, want string) error {
	if n.Labels == want {
		return nil
	}
	have := map[string]string{}
	if n.Labels != "" {
		if err := json.Unmarshal([]byte(n.Labels), &have); err != nil {
			return fmt.Errorf("labels of node %s: %w", n.Name, err)
		}
	}
	merged := maps.Clone(have)
	maps.Copy(merged, labels)
	if maps.Equal(merged, have) {
		return nil
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	return a.svc.store.SetNodeLabels(ctx, n.ID, string(b))
}

// teamBudgets is what each team's monthly budget has left.
func (a *Autoscaler) teamBudgets(ctx context.Context, now time.Time) (map[string]int64, error) {
	if a.budgets == nil {
		return nil, nil
	}
	sts, err := a.budgets.BudgetStatuses(ctx, now, 7*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	teams, err := a.svc.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	out := map[string]int64{}
	for _, s := range sts {
		if s.Budget.TeamID != nil {
			out[names[*s.Budget.TeamID]] = s.Budget.AmountMicros - s.Spent
		}
	}
	return out, nil
}

// act gives a decision effect; each failure is logged and recorded, and the rest goes on.
func (a *Autoscaler) act(ctx context.Context, d autoscale.Decision, states map[string]*poolState) {
	for _, u := range d.ScaleUps {
		ps := states[u.Pool]
		if _, err := a.svc.CreateNodes(ctx, ps.pool, u.Nodes, u.Reason, map[string]any{"jobs": u.Jobs}); err != nil {
			a.svc.log.Error("scale-up failed", "pool", u.Pool, "nodes", u.Nodes, "err", err)
		}
	}
	for _, down := range d.ScaleDowns {
		ps := states[down.Pool]
		name := ps.nodes[down.Node]
		if err := a.svc.RetireNode(ctx, ps.pool, name, down.Reason, a.cfg.DrainGrace); err != nil {
			a.svc.log.Error("scale-down failed", "pool", down.Pool, "node", name, "err", err)
		}
	}
	held := map[string]string{}
	for _, h := range d.Held {
		held[h.Pool] += h.Cause + "\n"
	}
	for pool, causes := range held {
		if a.lastHeld[pool] == causes {
			continue
		}
		ps, ok := states[pool]
		if !ok {
			// Demand that no pool fits belongs to none; it is logged, not recorded.
			a.svc.log.Info("waiting jobs fit no pool", "why", causes)
			a.lastHeld[pool] = causes
			continue
		}
		for _, h := range d.Held {
			if h.Pool != pool {
				continue
			}
			if err := a.svc.Record(ctx, ps.pool, models.PoolHeld, 0, h.Reason, map[string]any{"jobs": h.Jobs}); err != nil {
				a.svc.log.Error("cannot record a held-back scale-up", "pool", pool, "err", err)
			}
		}
		a.lastHeld[pool] = causes
	}
	for pool := range a.lastHeld {
		if _, ok := held[pool]; !ok {
			delete(a.lastHeld, pool)
		}
	}
}

// sample records each pool's nodes and demand, and drops old samples.
func (a *Autoscaler) sample(ctx context.Context, now time.Time, in autoscale.Input, d autoscale.Decision, states map[string]*poolState) error {
	var rows []models.PoolSample
	for _, p := range in.Pools {
		ps := states[p.Name]
		dm := d.Demand[p.Name]
		rows = append(rows, models.PoolSample{PoolID: ps.pool.ID, At: now, Nodes: len(p.Nodes), Booting: p.Booting,
			PendingJobs: dm.Jobs, PendingGPUMilli: dm.GPUMilli})
	}
	if err := a.svc.store.CreatePoolSamples(ctx, rows); err != nil {
		return err
	}
	_, err := a.svc.store.DeletePoolSamplesBefore(ctx, now.Add(-a.cfg.SampleRetention))
	return err
}
