package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateAllocations inserts allocs; an allocation for a job, attempt and replica
// that exists already is ErrConflict.
func (s *Store) CreateAllocations(ctx context.Context, allocs []models.Allocation) error {
	if len(allocs) == 0 {
		return nil
	}
	if err := translate(s.with(ctx).Create(&allocs).Error); err != nil {
		return fmt.Errorf("create %d allocations of job %d: %w", len(allocs), allocs[0].JobID, err)
	}
	return nil
}

// AllocationByAttempt returns the allocation of one replica of one attempt of a job.
func (s *Store) AllocationByAttempt(ctx context.Context, jobID int64, attempt, replica int) (*models.Allocation, error) {
	var a models.Allocation
	err := translate(s.with(ctx).Where("job_id = ? AND attempt = ? AND replica = ?", jobID, attempt, replica).First(&a).Error)
	if err != nil {
		return nil, fmt.Errorf("allocation of job %d attempt %d replica %d: %w", jobID, attempt, replica, err)
	}
	return &a, nil
}

// AllocationsOfJob returns the allocations of a job, by attempt then replica.
func (s *Store) AllocationsOfJob(ctx context.Context, jobID int64) ([]models.Allocation, error) {
	var out []models.Allocation
	if err := s.with(ctx).Where("job_id = ?", jobID).Order("attempt, replica").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("allocations of job %d: %w", jobID, err)
	}
	return out, nil
}

// The reads of allocations that are not ended say so as `state <> 'ended'`, written out:
// a query that says it so is read through index allocations_active (migration 0041), one
// that takes the state as a parameter scans every allocation ever made. On SQLite each
// row is one json_array() value (see signIn). TestActiveAllocationReadsUseTheirIndex
// reads their plans.

func (s *Store) activeAllocationsSQL() string {
	return s.selectRows(strings.Join(allocationColumns, ", "), "allocations WHERE state "+notEnded+" AND node_id = "+s.param(1)+" ORDER BY id")
}

func (s *Store) activeAllocationCountsSQL() string {
	return s.selectRows("node_id, COUNT(*)", "allocations WHERE state "+notEnded+" GROUP BY node_id")
}

func (s *Store) activeAllocationDevicesSQL() string {
	return s.selectRows("job_id, devices", "allocations WHERE state "+notEnded)
}

func (s *Store) activeAllocationsWithJobsSQL() string {
	cols := strings.Join(append(qualified("a.", allocationColumns), qualified("j.", jobPlacementColumns)...), ", ")
	return s.selectRows(cols, "allocations a JOIN jobs j ON j.id = a.job_id WHERE a.state "+notEnded+" ORDER BY a.id")
}

func (s *Store) activeAllocationUsesSQL() string {
	return s.selectRows("p.team_id, a.devices, a.cpu_milli, a.memory_mib",
		"allocations a JOIN jobs j ON j.id = a.job_id JOIN projects p ON p.id = j.project_id WHERE a.state "+notEnded)
}

const notEnded = "<> '" + models.AllocEnded + "'"

// ActiveAllocations returns the allocations on the node that are not ended, by id: they
// hold its resources. It reads through readRows, as every lease poll and heartbeat of
// the node does.
func (s *Store) ActiveAllocations(ctx context.Context, nodeID int64) ([]models.Allocation, error) {
	var out []models.Allocation
	var a models.Allocation
	if err := s.readRows(ctx, s.rowsRead(s.activeAllocationsSQL(), []any{nodeID}, allocationFields(&a), func() {
		out = append(out, a)
		a = models.Allocation{}
	})); err != nil {
		return nil, fmt.Errorf("active allocations of node %d: %w", nodeID, err)
	}
	return out, nil
}

// ActiveAllocationCounts returns how many allocations that are not ended each node holds,
// by node id (nodes without any are missing): what the nodes console shows of them.
func (s *Store) ActiveAllocationCounts(ctx context.Context) (map[int64]int, error) {
	out := map[int64]int{}
	var node int64
	var n int
	if err := s.readRows(ctx, s.rowsRead(s.activeAllocationCountsSQL(), nil, []any{&node, &n}, func() { out[node] = n })); err != nil {
		return nil, fmt.Errorf("active allocations by node: %w", err)
	}
	return out, nil
}

// AllocationDevices is the GPUs an active allocation holds, and its job.
type AllocationDevices struct {
	JobID   int64
	Devices string // as models.Allocation.Devices
}

// ActiveAllocationDevices returns the GPUs that every allocation that is not ended
// holds, with its job: what the cluster page shows of each GPU, on every view and every
// refresh (the allocations' every column were ~40 ms of it on SQLite with 7,700 running).
func (s *Store) ActiveAllocationDevices(ctx context.Context) ([]AllocationDevices, error) {
	var out []AllocationDevices
	var a AllocationDevices
	if err := s.readRows(ctx, s.rowsRead(s.activeAllocationDevicesSQL(), nil,
		[]any{&a.JobID, &a.Devices}, func() { out = append(out, a) })); err != nil {
		return nil, fmt.Errorf("the GPUs of active allocations: %w", err)
	}
	return out, nil
}

// AllocationChange is what UpdateAllocation writes; nil fields are left alone.
type AllocationChange struct {
	State      string
	StopReason *string
	ExitCode   *int
	StartedAt  *time.Time
	EndedAt    *time.Time
}

// UpdateAllocation applies ch to allocation id if it is in one of from; otherwise ErrStale.
func (s *Store) UpdateAllocation(ctx context.Context, id int64, from []string, ch AllocationChange) error {
	updates := map[string]any{"updated_at": time.Now().UTC()}
	if ch.State != "" {
		updates["state"] = ch.State
	}
	if ch.StopReason != nil {
		updates["stop_reason"] = *ch.StopReason
	}
	if ch.ExitCode != nil {
		updates["exit_code"] = *ch.ExitCode
	}
	if ch.StartedAt != nil {
		updates["started_at"] = *ch.StartedAt
	}
	if ch.EndedAt != nil {
		updates["ended_at"] = *ch.EndedAt
	}
	res := s.with(ctx).Model(&models.Allocation{}).Where("id = ? AND state IN ?", id, from).Updates(updates)
	if res.Error != nil {
		return fmt.Errorf("update allocation %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("update allocation %d: %w: it is not %v", id, ErrStale, from)
	}
	return nil
}

// SetJobTokenHash records the hash of the job token of allocation id, which must
// not have started. Unless replace is set, the allocation must have no token yet,
// so that of two lease polls only one mints it. Otherwise ErrStale.
func (s *Store) SetJobTokenHash(ctx context.Context, id int64, hash string, replace bool) error {
	q := s.with(ctx).Model(&models.Allocation{}).Where("id = ? AND state = ?", id, models.AllocPending)
	if !replace {
		q = q.Where("job_token_hash = ''")
	}
	res := q.Updates(map[string]any{"job_token_hash": hash, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("set the job token of allocation %d: %w", id, translate(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("set the job token of allocation %d: %w: it started or has a token", id, ErrStale)
	}
	return nil
}

// AllocationByJobTokenHash returns the allocation whose job token hashes to hash.
func (s *Store) AllocationByJobTokenHash(ctx context.Context, hash string) (*models.Allocation, error) {
	var a models.Allocation
	if err := translate(s.with(ctx).Where("job_token_hash = ? AND job_token_hash <> ''", hash).First(&a).Error); err != nil {
		return nil, fmt.Errorf("allocation by job token: %w", err)
	}
	return &a, nil
}

// MarkCheckpointSaved records, once, that the job of a stopping allocation saved its
// checkpoint. It reports whether it did: false when the allocation is not stopping or
// was marked already.
func (s *Store) MarkCheckpointSaved(ctx context.Context, id int64, at time.Time) (bool, error) {
	res := s.with(ctx).Model(&models.Allocation{}).
		Where("id = ? AND state = ? AND checkpoint_saved_at IS NULL", id, models.AllocStopping).
		Updates(map[string]any{"checkpoint_saved_at": at.UTC(), "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return false, fmt.Errorf("mark the checkpoint of allocation %d saved: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}
