package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// MeteringFleet is what metering reads about the fleet: nodes, their pools, GPUs and MIG slices.
type MeteringFleet struct {
	Nodes   []models.Node
	Pools   []models.NodePool
	Devices []models.GPUDevice
	Slices  []models.GPUSlice
}

// MeteringFleet returns every node, pool, GPU and MIG slice.
func (s *Store) MeteringFleet(ctx context.Context) (MeteringFleet, error) {
	var f MeteringFleet
	for what, dst := range map[string]any{"nodes": &f.Nodes, "pools": &f.Pools, "GPUs": &f.Devices, "MIG slices": &f.Slices} {
		if err := s.with(ctx).Order("id").Find(dst).Error; err != nil {
			return MeteringFleet{}, fmt.Errorf("read %s for metering: %w", what, err)
		}
	}
	return f, nil
}

// MeteredAllocation is an allocation with the owners of its job, as ledger entries carry them.
type MeteredAllocation struct {
	models.Allocation
	UserID    int64
	ProjectID int64
	TeamID    int64
	ImageID   *int64
}

// AllocationsToMeter returns the allocations that have started and are still running or
// ended after endedAfter, with the user, project, team and image of their job.
func (s *Store) AllocationsToMeter(ctx context.Context, endedAfter time.Time) ([]MeteredAllocation, error) {
	var out []MeteredAllocation
	err := s.with(ctx).Table("allocations").
		Select("allocations.*, jobs.user_id, jobs.project_id, projects.team_id, jobs.image_id").
		Joins("JOIN jobs ON jobs.id = allocations.job_id").
		Joins("JOIN projects ON projects.id = jobs.project_id").
		Where("allocations.started_at IS NOT NULL AND (allocations.ended_at IS NULL OR allocations.ended_at > ?)", endedAfter).
		Order("allocations.id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read allocations to meter: %w", err)
	}
	return out, nil
}
