package store

import (
	"context"
	"fmt"

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
