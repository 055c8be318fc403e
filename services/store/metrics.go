package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// QueueLength is how many jobs of one team wait in one priority class.
type QueueLength struct {
	Class string
	Team  string
	Jobs  int
}

// QueueLengths counts the queued jobs per priority class and team: per class and
// project first, from the index jobs_state_class_project alone, then per team over
// those few rows, not over every queued job.
func (s *Store) QueueLengths(ctx context.Context) ([]QueueLength, error) {
	var out []QueueLength
	err := s.with(ctx).Raw(`SELECT q.priority_class AS class, t.name AS team, SUM(q.n) AS jobs
FROM (SELECT priority_class, project_id, COUNT(*) AS n FROM jobs WHERE state = ? GROUP BY priority_class, project_id) q
JOIN projects p ON p.id = q.project_id
JOIN teams t ON t.id = p.team_id
GROUP BY q.priority_class, t.name ORDER BY q.priority_class, t.name`, models.JobQueued).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("count queued jobs by class and team: %w", err)
	}
	return out, nil
}

// GPUCapacity is the fleet's GPUs on nodes that are up, and how much of them live
// allocations hold, in milli-GPUs. ForeignMilli is what jobs submitted to a Slurm
// pool's partition outside Gantry hold there.
type GPUCapacity struct {
	TotalMilli     int64
	AllocatedMilli int64
	ForeignMilli   int64
}

// GPUCapacity sums the GPUs of ready, draining and cordoned nodes (those of a Slurm
// node in several pools once), and the milli-GPUs of pending, running and stopping
// allocations.
func (s *Store) GPUCapacity(ctx context.Context) (GPUCapacity, error) {
	var c GPUCapacity
	var devices int64
	err := s.with(ctx).Table("gpu_devices d").Joins("JOIN nodes n ON n.id = d.node_id").
		Where("n.state IN ?", []string{models.NodeReady, models.NodeDraining, models.NodeCordoned}).
		Count(&devices).Error
	if err != nil {
		return c, fmt.Errorf("count GPUs of nodes that are up: %w", err)
	}
	err = s.with(ctx).Model(&models.Allocation{}).
		Where("state IN ?", []string{models.AllocPending, models.AllocRunning, models.AllocStopping}).
		Select("COALESCE(SUM(gpu_milli), 0)").Row().Scan(&c.AllocatedMilli)
	if err != nil {
		return c, fmt.Errorf("sum allocated GPUs: %w", err)
	}
	copies, err := s.sharedCopyGPUs(ctx)
	if err != nil {
		return c, err
	}
	c.TotalMilli = (devices - copies) * 1000
	if c.ForeignMilli, err = s.foreignGPUMilli(ctx); err != nil {
		return c, err
	}
	return c, nil
}

// sharedCopyGPUs counts the GPUs of the Gantry nodes that are up and share a Slurm
// node with an earlier one (a node in the partitions of several pools): its GPUs
// count once, on the first.
func (s *Store) sharedCopyGPUs(ctx context.Context) (int64, error) {
	var up []models.Node
	err := s.with(ctx).Where("runtime = ? AND state IN ?", models.RuntimeSlurm,
		[]string{models.NodeReady, models.NodeDraining, models.NodeCordoned}).Find(&up).Error
	if err != nil {
		return 0, fmt.Errorf("Slurm nodes that are up: %w", err)
	}
	var copies []int64
	for id, first := range models.SharedSlurmNodes(up) {
		if id != first {
			copies = append(copies, id)
		}
	}
	if len(copies) == 0 {
		return 0, nil
	}
	var n int64
	if err := s.with(ctx).Model(&models.GPUDevice{}).Where("node_id IN ?", copies).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count GPUs of shared Slurm nodes: %w", err)
	}
	return n, nil
}

// foreignGPUMilli sums the GPUs that running jobs outside Gantry hold on Slurm nodes
// that are up.
func (s *Store) foreignGPUMilli(ctx context.Context) (int64, error) {
	var up []string
	err := s.with(ctx).Model(&models.Node{}).Where("runtime = ? AND state IN ?", models.RuntimeSlurm,
		[]string{models.NodeReady, models.NodeDraining, models.NodeCordoned}).Pluck("name", &up).Error
	if err != nil {
		return 0, fmt.Errorf("Slurm nodes that are up: %w", err)
	}
	isUp := make(map[string]bool, len(up))
	for _, n := range up {
		isUp[n] = true
	}
	var jobs []models.SlurmForeignJob
	if err := s.with(ctx).Where("state = ? AND gpus > 0", "RUNNING").Find(&jobs).Error; err != nil {
		return 0, fmt.Errorf("running jobs outside Gantry: %w", err)
	}
	var milli int64
	for _, j := range jobs {
		var nodes []string
		if err := json.Unmarshal([]byte(j.Nodes), &nodes); err != nil {
			return 0, fmt.Errorf("nodes of Slurm job %s: %w", j.SlurmJobID, err)
		}
		for _, n := range nodes {
			if isUp[n] {
				milli += int64(j.GPUs) * 1000
			}
		}
	}
	return milli, nil
}

// TeamCost is what one team has accrued in the ledger, in micro-units; Team is empty
// for usage that belongs to no team.
type TeamCost struct {
	Team         string
	AmountMicros int64
}

// CostAccruedByTeam sums the daily ledger per team.
func (s *Store) CostAccruedByTeam(ctx context.Context) ([]TeamCost, error) {
	var out []TeamCost
	err := s.with(ctx).Table("ledger_daily l").
		Select("COALESCE(t.name, '') AS team, SUM(l.amount_micros) AS amount_micros").
		Joins("LEFT JOIN teams t ON t.id = l.team_id").
		Group("COALESCE(t.name, '')").Order("team").
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("sum cost by team: %w", err)
	}
	return out, nil
}

// LatestXIDs returns, per device UUID, the code of the newest XID error raised at or
// after since.
func (s *Store) LatestXIDs(ctx context.Context, since time.Time) (map[string]int, error) {
	var rows []struct {
		DeviceUUID string
		LastXID    int `gorm:"column:last_xid"`
		At         time.Time
	}
	err := s.with(ctx).Model(&models.TelemetrySample{}).Select("device_uuid, last_xid, at").
		Where("resolution = ? AND at >= ? AND xid_count > 0", models.ResolutionRaw, since.UTC()).
		Order("at").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("newest XIDs since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.DeviceUUID] = r.LastXID // ordered by time: the newest wins
	}
	return out, nil
}
