package pools

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Fleet is what the pools service asks of dispatch: node states, removal and spot reclaim.
type Fleet interface {
	SetNodeState(ctx context.Context, name, state, reason string, deadline time.Time) (*models.Node, error)
	Reclaim(ctx context.Context, name string, deadline time.Time, reason string) error
	RemoveNode(ctx context.Context, name, reason string) (*models.Node, error)
}

// Config holds the timings of provisioning.
type Config struct {
	// Server is the URL new machines' agents reach Gantry at.
	Server string
	// BootTimeout is how long a requested machine may take to join; after it the
	// machine is deleted and counted as failed.
	BootTimeout time.Duration
	// ListGrace is how long after a request a provider's list may still omit the
	// machine (clouds list new machines late).
	ListGrace time.Duration
}

// DefaultConfig is what `gantry serve` uses unless told otherwise.
func DefaultConfig() Config {
	return Config{BootTimeout: 15 * time.Minute, ListGrace: 2 * time.Minute}
}

// Service keeps pools and gives the autoscaler's decisions effect. It is safe for
// concurrent use.
type Service struct {
	store     *store.Store
	audit     *audit.Log
	fleet     Fleet
	now       func() time.Time
	log       *slog.Logger
	cfg       Config
	providers func(models.NodePool) (Provider, error)
}

// Deps are what the service works with.
type Deps struct {
	Store *store.Store
	Audit *audit.Log
	Fleet Fleet
	Now   func() time.Time
	Log   *slog.Logger
}

// New returns the pools service.
func New(d Deps, cfg Config) (*Service, error) {
	if d.Store == nil || d.Audit == nil || d.Fleet == nil || d.Now == nil || d.Log == nil {
		return nil, errors.New("pools needs a store, an audit log, the fleet, a clock and a logger")
	}
	if cfg.BootTimeout <= 0 || cfg.ListGrace <= 0 {
		return nil, errors.New("pools: boot timeout and list grace must be positive")
	}
	return &Service{store: d.Store, audit: d.Audit, fleet: d.Fleet, now: d.Now, log: d.Log, cfg: cfg, providers: ProviderOf}, nil
}

// Apply creates the pool of spec, or changes the pool of that name, audited with the
// actor of ctx. It returns the pool and whether it was created; a refused spec
// changes nothing.
func Apply(ctx context.Context, st *store.Store, al *audit.Log, spec Spec) (*models.NodePool, bool, error) {
	p, err := spec.Validate()
	if err != nil {
		return nil, false, err
	}
	created := false
	err = st.InTx(ctx, func(tx *store.Store) error {
		old, err := tx.NodePoolByName(ctx, p.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			created = true
			if err := tx.CreateNodePool(ctx, &p); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			p.ID, p.CreatedAt = old.ID, old.CreatedAt
			if err := tx.SaveNodePool(ctx, &p); err != nil {
				return err
			}
		}
		action := "pool.updated"
		if created {
			action = "pool.created"
		}
		return al.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "pool", ObjectID: p.Name, Detail: map[string]any{
			"provider": p.Provider, "capacity_type": p.CapacityType, "min_nodes": p.MinNodes, "max_nodes": p.MaxNodes,
			"spot_only": p.SpotOnly, "template": p.Template,
		}})
	})
	if err != nil {
		return nil, false, fmt.Errorf("apply pool %s: %w", p.Name, err)
	}
	return &p, created, nil
}

// record appends a pool event and its audit entry in one transaction.
func (s *Service) record(ctx context.Context, tx *store.Store, p models.NodePool, kind string, nodes int, reason string, detail map[string]any) error {
	raw := ""
	if len(detail) > 0 {
		b, err := jsonString(detail)
		if err != nil {
			return err
		}
		raw = b
	}
	id := p.ID
	if err := tx.CreatePoolEvent(ctx, &models.PoolEvent{PoolID: &id, At: s.now().UTC(), Kind: kind, Nodes: nodes, Reason: reason, Detail: raw}); err != nil {
		return err
	}
	d := map[string]any{"reason": reason, "nodes": nodes}
	for k, v := range detail {
		d[k] = v
	}
	return s.audit.In(tx).Append(ctx, audit.Entry{Action: "pool." + kind, ObjectType: "pool", ObjectID: p.Name, Detail: d})
}

// Record appends a pool event with its audit entry, as the actor of ctx.
func (s *Service) Record(ctx context.Context, p models.NodePool, kind string, nodes int, reason string, detail map[string]any) error {
	return s.store.InTx(ctx, func(tx *store.Store) error { return s.record(ctx, tx, p, kind, nodes, reason, detail) })
}

// newNodeName is the pool's name and a random suffix.
func newNodeName(pool string) string {
	return pool + "-" + strings.ToLower(rand.Text()[:8])
}
