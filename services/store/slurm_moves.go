package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// SlurmClusterMove returns the mark of a Slurm pool that stands still on a slurm.conf
// leading to another cluster than its open jobs' (ErrNotFound when it does not).
func (s *Store) SlurmClusterMove(ctx context.Context, poolID int64) (*models.SlurmClusterMove, error) {
	var m models.SlurmClusterMove
	if err := translate(s.with(ctx).Where("pool_id = ?", poolID).First(&m).Error); err != nil {
		return nil, fmt.Errorf("cluster move of pool %d: %w", poolID, err)
	}
	return &m, nil
}

// MarkSlurmClusterMove marks a pool as standing still on another cluster, or, when it
// already is, takes m's clusters and reason and keeps when it was found and last seen.
func (s *Store) MarkSlurmClusterMove(ctx context.Context, m *models.SlurmClusterMove) error {
	err := s.with(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "pool_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"jobs_cluster", "conf_cluster", "reason"})}).Create(m).Error
	if err != nil {
		return fmt.Errorf("mark pool %d as on another cluster: %w", m.PoolID, translate(err))
	}
	return nil
}

// UnmarkSlurmClusterMove takes the mark off a pool that reads its cluster again.
func (s *Store) UnmarkSlurmClusterMove(ctx context.Context, poolID int64) error {
	if err := s.with(ctx).Where("pool_id = ?", poolID).Delete(&models.SlurmClusterMove{}).Error; err != nil {
		return fmt.Errorf("unmark the cluster move of pool %d: %w", poolID, err)
	}
	return nil
}
