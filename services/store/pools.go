package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateNodePool inserts a pool; a taken name is ErrConflict.
func (s *Store) CreateNodePool(ctx context.Context, p *models.NodePool) error {
	if err := translate(s.with(ctx).Create(p).Error); err != nil {
		return fmt.Errorf("create pool %s: %w", p.Name, err)
	}
	return nil
}

// NodePools returns every pool ordered by name.
func (s *Store) NodePools(ctx context.Context) ([]models.NodePool, error) {
	var out []models.NodePool
	if err := s.with(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	return out, nil
}

// NodePoolByName returns the pool called name.
func (s *Store) NodePoolByName(ctx context.Context, name string) (*models.NodePool, error) {
	var p models.NodePool
	if err := translate(s.with(ctx).Where("name = ?", name).First(&p).Error); err != nil {
		return nil, fmt.Errorf("pool %s: %w", name, err)
	}
	return &p, nil
}

// SaveNodePool writes every field of an existing pool.
func (s *Store) SaveNodePool(ctx context.Context, p *models.NodePool) error {
	if err := translate(s.with(ctx).Save(p).Error); err != nil {
		return fmt.Errorf("save pool %s: %w", p.Name, err)
	}
	return nil
}

// NodesOfPool returns the nodes of a pool, by id.
func (s *Store) NodesOfPool(ctx context.Context, poolID int64) ([]models.Node, error) {
	var out []models.Node
	if err := s.with(ctx).Where("pool_id = ?", poolID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("nodes of pool %d: %w", poolID, err)
	}
	return out, nil
}

// CreatePoolInstance records a machine asked of a pool's provider; a taken name is ErrConflict.
func (s *Store) CreatePoolInstance(ctx context.Context, in *models.PoolInstance) error {
	if err := translate(s.with(ctx).Create(in).Error); err != nil {
		return fmt.Errorf("create pool instance %s: %w", in.Name, err)
	}
	return nil
}

// PoolInstances returns the instances of a pool in one of states (all when none), by id.
func (s *Store) PoolInstances(ctx context.Context, poolID int64, states ...string) ([]models.PoolInstance, error) {
	q := s.with(ctx).Where("pool_id = ?", poolID)
	if len(states) > 0 {
		q = q.Where("state IN ?", states)
	}
	var out []models.PoolInstance
	if err := q.Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("instances of pool %d: %w", poolID, err)
	}
	return out, nil
}

// InstanceChange is what SetPoolInstanceState writes besides the state and reason.
type InstanceChange struct {
	ProviderID *string
	JoinedAt   *time.Time
	DeletedAt  *time.Time
}

// SetPoolInstanceState moves instance id to state `to` if it is in one of from; otherwise ErrStale.
func (s *Store) SetPoolInstanceState(ctx context.Context, id int64, from []string, to, reason string, ch InstanceChange) error {
	up := map[string]any{"state": to, "state_reason": reason, "updated_at": time.Now().UTC()}
	if ch.ProviderID != nil {
		up["provider_id"] = *ch.ProviderID
	}
	if ch.JoinedAt != nil {
		up["joined_at"] = ch.JoinedAt.UTC()
	}
	if ch.DeletedAt != nil {
		up["deleted_at"] = ch.DeletedAt.UTC()
	}
	res := s.with(ctx).Model(&models.PoolInstance{}).Where("id = ? AND state IN ?", id, from).Updates(up)
	if res.Error != nil {
		return fmt.Errorf("set pool instance %d %s: %w", id, to, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("set pool instance %d %s: %w: instance is not in %v", id, to, ErrStale, from)
	}
	return nil
}

// CreatePoolEvent appends a decision about a pool.
func (s *Store) CreatePoolEvent(ctx context.Context, e *models.PoolEvent) error {
	if err := translate(s.with(ctx).Create(e).Error); err != nil {
		return fmt.Errorf("record pool event %s: %w", e.Kind, err)
	}
	return nil
}

// PoolEventFilter selects pool events; zero fields select everything.
type PoolEventFilter struct {
	PoolID   int64
	Since    time.Time
	BeforeID int64
	Limit    int
}

// PoolEvents returns events newest first.
func (s *Store) PoolEvents(ctx context.Context, f PoolEventFilter) ([]models.PoolEvent, error) {
	q := s.with(ctx)
	if f.PoolID != 0 {
		q = q.Where("pool_id = ?", f.PoolID)
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", f.Since.UTC())
	}
	if f.BeforeID != 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	var out []models.PoolEvent
	if err := q.Order("id DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("pool events: %w", err)
	}
	return out, nil
}

// CreatePoolSamples appends samples of node count and demand.
func (s *Store) CreatePoolSamples(ctx context.Context, samples []models.PoolSample) error {
	if len(samples) == 0 {
		return nil
	}
	if err := translate(s.with(ctx).Create(&samples).Error); err != nil {
		return fmt.Errorf("record %d pool samples: %w", len(samples), err)
	}
	return nil
}

// PoolSamples returns a pool's samples in [from, to), oldest first.
func (s *Store) PoolSamples(ctx context.Context, poolID int64, from, to time.Time) ([]models.PoolSample, error) {
	var out []models.PoolSample
	err := s.with(ctx).Where("pool_id = ? AND at >= ? AND at < ?", poolID, from.UTC(), to.UTC()).Order("at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("samples of pool %d: %w", poolID, err)
	}
	return out, nil
}

// DeletePoolSamplesBefore drops samples older than before; it returns how many went.
func (s *Store) DeletePoolSamplesBefore(ctx context.Context, before time.Time) (int64, error) {
	res := s.with(ctx).Where("at < ?", before.UTC()).Delete(&models.PoolSample{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune pool samples: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// NodesLastBusy returns, for each of the nodes that ever ran an allocation, when its
// last one ended; nodes running one now map to the zero time.
func (s *Store) NodesLastBusy(ctx context.Context, nodeIDs []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(nodeIDs))
	err := inBatches(nodeIDs, func(batch []int64) error {
		var rows []struct {
			NodeID int64
			Active int64
			Ended  dbTime
		}
		err := s.with(ctx).Model(&models.Allocation{}).
			Select("node_id, SUM(CASE WHEN state = ? THEN 0 ELSE 1 END) AS active, MAX(COALESCE(ended_at, created_at)) AS ended", models.AllocEnded).
			Where("node_id IN ?", batch).Group("node_id").Scan(&rows).Error
		for _, r := range rows {
			if r.Active > 0 {
				out[r.NodeID] = time.Time{}
			} else {
				out[r.NodeID] = time.Time(r.Ended)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("last busy time of nodes: %w", err)
	}
	return out, nil
}

// LastPoolRequests returns, per pool that ever asked its provider for a machine, when it last did.
func (s *Store) LastPoolRequests(ctx context.Context) (map[int64]time.Time, error) {
	var rows []struct {
		PoolID int64
		At     dbTime
	}
	err := s.with(ctx).Model(&models.PoolInstance{}).Select("pool_id, MAX(requested_at) AS at").Group("pool_id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("last requests of pools: %w", err)
	}
	out := make(map[int64]time.Time, len(rows))
	for _, r := range rows {
		out[r.PoolID] = time.Time(r.At)
	}
	return out, nil
}

// SetNodeLabels writes a node's labels (a JSON object).
func (s *Store) SetNodeLabels(ctx context.Context, id int64, labels string) error {
	if err := s.with(ctx).Model(&models.Node{}).Where("id = ?", id).Update("labels", labels).Error; err != nil {
		return fmt.Errorf("set labels of node %d: %w", id, err)
	}
	return nil
}
