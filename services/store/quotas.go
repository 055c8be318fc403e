package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Quotas returns every quota, by team id and model.
func (s *Store) Quotas(ctx context.Context) ([]models.Quota, error) {
	var out []models.Quota
	if err := s.with(ctx).Order("team_id, gpu_model").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list quotas: %w", err)
	}
	return out, nil
}

// QuotaOf returns the team's quota for the model ("" for any).
func (s *Store) QuotaOf(ctx context.Context, teamID int64, model string) (*models.Quota, error) {
	var q models.Quota
	if err := translate(s.with(ctx).Where("team_id = ? AND gpu_model = ?", teamID, model).First(&q).Error); err != nil {
		return nil, fmt.Errorf("quota of team %d for %q: %w", teamID, model, err)
	}
	return &q, nil
}

// SaveQuota inserts q, or saves every field of it when it has an id.
func (s *Store) SaveQuota(ctx context.Context, q *models.Quota) error {
	if err := translate(s.with(ctx).Save(q).Error); err != nil {
		return fmt.Errorf("save quota of team %d for %q: %w", q.TeamID, q.GPUModel, err)
	}
	return nil
}

// DeleteQuota removes the quota with id; a missing one is ErrNotFound.
func (s *Store) DeleteQuota(ctx context.Context, id int64) error {
	res := s.with(ctx).Delete(&models.Quota{}, id)
	if res.Error != nil {
		return fmt.Errorf("delete quota %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete quota %d: %w", id, ErrNotFound)
	}
	return nil
}

// TeamUsage is one ended allocation as fair share counts it: who used what, when.
type TeamUsage struct {
	TeamID    int64
	StartedAt time.Time
	EndedAt   time.Time
	GPUMilli  int64
	CPUMilli  int64
	MemoryMiB int64 `gorm:"column:memory_mib"`
}

// UsageEndedSince returns the allocations that ran and ended at or after since, with
// their jobs' teams, for the scheduler's fair-share history.
func (s *Store) UsageEndedSince(ctx context.Context, since time.Time) ([]TeamUsage, error) {
	var rows []struct {
		TeamID    int64
		StartedAt dbTime
		EndedAt   dbTime
		GPUMilli  int64
		CPUMilli  int64
		MemoryMiB int64 `gorm:"column:memory_mib"`
	}
	err := s.with(ctx).Raw(`SELECT p.team_id, a.started_at, a.ended_at, a.gpu_milli, a.cpu_milli, a.memory_mib
		FROM allocations a JOIN jobs j ON j.id = a.job_id JOIN projects p ON p.id = j.project_id
		WHERE a.ended_at >= ? AND a.started_at IS NOT NULL ORDER BY a.id`, since.UTC()).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("usage ended since %s: %w", since.Format(time.RFC3339), err)
	}
	out := make([]TeamUsage, len(rows))
	for i, r := range rows {
		out[i] = TeamUsage{TeamID: r.TeamID, StartedAt: time.Time(r.StartedAt), EndedAt: time.Time(r.EndedAt),
			GPUMilli: r.GPUMilli, CPUMilli: r.CPUMilli, MemoryMiB: r.MemoryMiB}
	}
	return out, nil
}
