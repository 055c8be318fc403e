package pools

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
)

// Summary is a pool as the pools page lists it.
type Summary struct {
	Pool     models.NodePool
	Template Template
	// PriceMicros is an hour of one node at the rate card now.
	PriceMicros int64
	// InService counts nodes that are ready, cordoned or draining; Booting the
	// machines asked for whose agent has not joined; Retiring those being scaled down.
	InService, Booting, Retiring int
	LastEvent                    *models.PoolEvent
}

// Detail is one pool's page: its summary, nodes, machines, samples and decisions.
type Detail struct {
	Summary
	Nodes     []models.Node
	Instances []models.PoolInstance
	Samples   []models.PoolSample
	Events    []models.PoolEvent
	// MoreEvents is the id to page older events from; 0 when there are none.
	MoreEvents int64
}

// Summaries lists every pool with its node counts and price at now.
func Summaries(ctx context.Context, st *store.Store, now time.Time) ([]Summary, error) {
	list, err := st.NodePools(ctx)
	if err != nil {
		return nil, err
	}
	rates, err := st.CostRates(ctx)
	if err != nil {
		return nil, err
	}
	prices := accounting.NewPrices(rates)
	out := make([]Summary, 0, len(list))
	for _, p := range list {
		s, err := summarize(ctx, st, p, prices, now)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func summarize(ctx context.Context, st *store.Store, p models.NodePool, prices accounting.Prices, now time.Time) (Summary, error) {
	t, err := ParseTemplate(p.Template)
	if err != nil {
		return Summary{}, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	s := Summary{Pool: p, Template: t, PriceMicros: prices.NodeHour(now, accounting.Machine{PoolID: p.ID, Capacity: p.CapacityType,
		GPUModel: t.GPUModel, GPUs: t.GPUs, CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB})}
	nodes, err := st.NodesOfPool(ctx, p.ID)
	if err != nil {
		return s, err
	}
	joined := map[string]bool{}
	for _, n := range nodes {
		joined[n.Name] = true
		if n.State == models.NodeReady || n.State == models.NodeCordoned || n.State == models.NodeDraining {
			s.InService++
		}
	}
	insts, err := st.PoolInstances(ctx, p.ID, models.InstanceRequested, models.InstanceDeleting)
	if err != nil {
		return s, err
	}
	for _, in := range insts {
		switch {
		case in.State == models.InstanceDeleting:
			s.Retiring++
		case !joined[in.Name]:
			s.Booting++
		}
	}
	evs, err := st.PoolEvents(ctx, store.PoolEventFilter{PoolID: p.ID, Limit: 1})
	if err != nil {
		return s, err
	}
	if len(evs) == 1 {
		s.LastEvent = &evs[0]
	}
	return s, nil
}

// DetailOf is pool name's page: samples over [from, to), events before beforeID (0:
// the newest), limit of them.
func DetailOf(ctx context.Context, st *store.Store, name string, now, from, to time.Time, beforeID int64, limit int) (*Detail, error) {
	p, err := st.NodePoolByName(ctx, name)
	if err != nil {
		return nil, err
	}
	rates, err := st.CostRates(ctx)
	if err != nil {
		return nil, err
	}
	s, err := summarize(ctx, st, *p, accounting.NewPrices(rates), now)
	if err != nil {
		return nil, err
	}
	d := &Detail{Summary: s}
	if d.Nodes, err = st.NodesOfPool(ctx, p.ID); err != nil {
		return nil, err
	}
	if d.Instances, err = st.PoolInstances(ctx, p.ID, models.InstanceRequested, models.InstanceRunning, models.InstanceDeleting); err != nil {
		return nil, err
	}
	if d.Samples, err = st.PoolSamples(ctx, p.ID, from, to); err != nil {
		return nil, err
	}
	if d.Events, err = st.PoolEvents(ctx, store.PoolEventFilter{PoolID: p.ID, BeforeID: beforeID, Limit: limit + 1}); err != nil {
		return nil, err
	}
	if len(d.Events) > limit {
		d.Events = d.Events[:limit]
		d.MoreEvents = d.Events[limit-1].ID
	}
	return d, nil
}
