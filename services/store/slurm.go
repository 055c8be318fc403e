package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// PoolNode is a node that a pool's provider owns and reports (a Slurm node), with its GPUs.
type PoolNode struct {
	Node    models.Node
	Devices []models.GPUDevice
}

// NodeChange is what SyncPoolNodes changed about one node.
type NodeChange struct {
	Name       string
	From, To   string // states; From is "" for a node seen for the first time
	Reason     string
	GPUsBefore int
	GPUsAfter  int
}

// SyncPoolNodes makes the nodes of pool poolID those its provider reports: new ones
// are created, known ones take the reported state, reason, resources, labels and
// GPUs, and those no longer reported go down with gone as the reason. A reported
// name that another pool's node or an agent's node holds is ErrConflict, and
// nothing changes. It returns what changed.
func (s *Store) SyncPoolNodes(ctx context.Context, poolID int64, nodes []PoolNode, gone string) ([]NodeChange, error) {
	var changes []NodeChange
	err := s.InTx(ctx, func(tx *Store) error {
		changes = nil
		var have []models.Node
		if err := tx.with(ctx).Where("pool_id = ?", poolID).Find(&have).Error; err != nil {
			return err
		}
		byName := make(map[string]*models.Node, len(have))
		for i := range have {
			byName[have[i].Name] = &have[i]
		}
		reported := map[string]bool{}
		for _, pn := range nodes {
			reported[pn.Node.Name] = true
			ch, err := tx.syncPoolNode(ctx, poolID, byName[pn.Node.Name], pn)
			if err != nil {
				return err
			}
			if ch != nil {
				changes = append(changes, *ch)
			}
		}
		for _, n := range have {
			if reported[n.Name] || n.State == models.NodeDown && n.StateReason == gone {
				continue
			}
			if err := tx.SetNodeState(ctx, n.ID, []string{n.State}, models.NodeDown, gone); err != nil {
				return err
			}
			changes = append(changes, NodeChange{Name: n.Name, From: n.State, To: models.NodeDown, Reason: gone})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sync nodes of pool %d: %w", poolID, err)
	}
	return changes, nil
}

// syncPoolNode creates or updates one reported node; old is its row, nil when new.
func (s *Store) syncPoolNode(ctx context.Context, poolID int64, old *models.Node, pn PoolNode) (*NodeChange, error) {
	n := pn.Node
	n.PoolID = &poolID
	if old == nil {
		if _, err := s.NodeByName(ctx, n.Name); err == nil {
			return nil, fmt.Errorf("%w: node %s belongs to another pool or an agent", ErrConflict, n.Name)
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if err := s.CreateNode(ctx, &n, append([]models.GPUDevice(nil), pn.Devices...)); err != nil {
			return nil, err
		}
		return &NodeChange{Name: n.Name, To: n.State, Reason: n.StateReason, GPUsAfter: len(pn.Devices)}, nil
	}
	devs, err := s.DevicesOfNode(ctx, old.ID)
	if err != nil {
		return nil, err
	}
	sameGPUs := len(devs) == len(pn.Devices)
	for i := 0; sameGPUs && i < len(devs); i++ {
		a, b := devs[i], pn.Devices[i]
		sameGPUs = a.UUID == b.UUID && a.Index == b.Index && a.Model == b.Model && a.MemoryMiB == b.MemoryMiB && a.Healthy == b.Healthy &&
			a.NVLinkPeers == b.NVLinkPeers
	}
	same := old.State == n.State && old.StateReason == n.StateReason && old.Labels == n.Labels && old.CPUMilli == n.CPUMilli &&
		old.MemoryMiB == n.MemoryMiB && old.Runtime == n.Runtime
	if same && sameGPUs {
		return nil, nil
	}
	n.ID, n.CreatedAt = old.ID, old.CreatedAt
	if err := s.SaveNode(ctx, &n); err != nil {
		return nil, err
	}
	if !sameGPUs {
		nd := make([]NodeDevice, len(pn.Devices))
		for i, d := range pn.Devices {
			nd[i] = NodeDevice{GPUDevice: d}
		}
		if err := s.ReplaceNodeDevices(ctx, old.ID, nd); err != nil {
			return nil, err
		}
	}
	if old.State == n.State && sameGPUs {
		return nil, nil // a new reason or resources: not worth a change record
	}
	return &NodeChange{Name: n.Name, From: old.State, To: n.State, Reason: n.StateReason, GPUsBefore: len(devs), GPUsAfter: len(pn.Devices)}, nil
}

// CreateSlurmJob records a submitted Slurm job; one for the same job and attempt is ErrConflict.
func (s *Store) CreateSlurmJob(ctx context.Context, j *models.SlurmJob) error {
	if err := translate(s.with(ctx).Create(j).Error); err != nil {
		return fmt.Errorf("record Slurm job %s of job %d attempt %d: %w", j.SlurmJobID, j.JobID, j.Attempt, err)
	}
	return nil
}

// SlurmJobByID returns the Slurm job row id.
func (s *Store) SlurmJobByID(ctx context.Context, id int64) (*models.SlurmJob, error) {
	var j models.SlurmJob
	if err := translate(s.with(ctx).First(&j, id).Error); err != nil {
		return nil, fmt.Errorf("Slurm job row %d: %w", id, err)
	}
	return &j, nil
}

// SlurmJobsOfJob returns the Slurm jobs submitted for a job, by attempt.
func (s *Store) SlurmJobsOfJob(ctx context.Context, jobID int64) ([]models.SlurmJob, error) {
	var out []models.SlurmJob
	if err := s.with(ctx).Where("job_id = ?", jobID).Order("attempt").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("Slurm jobs of job %d: %w", jobID, err)
	}
	return out, nil
}

// OpenSlurmJobs returns the Slurm jobs of a pool that still need Gantry: followed,
// or with output not yet stored, by id.
func (s *Store) OpenSlurmJobs(ctx context.Context, poolID int64) ([]models.SlurmJob, error) {
	var out []models.SlurmJob
	if err := s.with(ctx).Where("pool_id = ? AND logs_done = ?", poolID, false).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("open Slurm jobs of pool %d: %w", poolID, err)
	}
	return out, nil
}

// SaveSlurmJob writes every field of j.
func (s *Store) SaveSlurmJob(ctx context.Context, j *models.SlurmJob) error {
	if err := translate(s.with(ctx).Save(j).Error); err != nil {
		return fmt.Errorf("save Slurm job %s: %w", j.SlurmJobID, err)
	}
	return nil
}

// NoteJob records an event on a job that stays in state (what Slurm says of it while
// it waits there, say); a job that waits (queued, scheduled or held) keeps message
// as its pending reason. A job no longer in state is ErrStale.
func (s *Store) NoteJob(ctx context.Context, id int64, state, reason, message, actor string) error {
	err := s.InTx(ctx, func(tx *Store) error {
		updates := map[string]any{"updated_at": time.Now().UTC()}
		if state == models.JobQueued || state == models.JobScheduled || state == models.JobHeld {
			updates["pending_reason"] = message
		}
		res := tx.with(ctx).Model(&models.Job{}).Where("id = ? AND state = ?", id, state).Updates(updates)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("%w: job is no longer %s", ErrStale, state)
		}
		var attempt int
		if err := tx.with(ctx).Model(&models.Job{}).Where("id = ?", id).Pluck("attempt", &attempt).Error; err != nil {
			return err
		}
		return tx.with(ctx).Create(&models.JobEvent{
			JobID: id, Attempt: attempt, FromState: state, ToState: state, Reason: reason, Message: message, Actor: actor,
		}).Error
	})
	if err != nil {
		return fmt.Errorf("note on job %d: %w", id, err)
	}
	return nil
}

// MoveAllocation puts an allocation on another node with other devices: where Slurm
// actually started the run that Gantry reserved elsewhere in the same pool.
func (s *Store) MoveAllocation(ctx context.Context, id, nodeID int64, devices string, gpuMilli int64) error {
	res := s.with(ctx).Model(&models.Allocation{}).Where("id = ?", id).
		Updates(map[string]any{"node_id": nodeID, "devices": devices, "gpu_milli": gpuMilli, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("move allocation %d to node %d: %w", id, nodeID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("move allocation %d: %w", id, ErrNotFound)
	}
	return nil
}

// SlurmAllocationsToSubmit returns the first replicas of attempts placed on a pool's
// nodes that wait for their Slurm job: pending, with no Slurm job running that
// attempt yet. One Slurm job runs every replica of an attempt.
func (s *Store) SlurmAllocationsToSubmit(ctx context.Context, poolID int64) ([]models.Allocation, error) {
	var out []models.Allocation
	err := s.with(ctx).Model(&models.Allocation{}).
		Joins("JOIN nodes ON nodes.id = allocations.node_id").
		Where("nodes.pool_id = ? AND allocations.state = ? AND allocations.replica = 0", poolID, models.AllocPending).
		Where("NOT EXISTS (SELECT 1 FROM slurm_jobs WHERE slurm_jobs.job_id = allocations.job_id AND slurm_jobs.current_attempt = allocations.attempt)").
		Order("allocations.id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("allocations of pool %d to submit to Slurm: %w", poolID, err)
	}
	return out, nil
}

// SyncForeignJobs makes the pool's jobs outside Gantry those of jobs (by Slurm job
// id): new ones are added, changed ones updated, those no longer listed deleted.
func (s *Store) SyncForeignJobs(ctx context.Context, poolID int64, jobs []models.SlurmForeignJob) error {
	err := s.InTx(ctx, func(tx *Store) error {
		var have []models.SlurmForeignJob
		if err := tx.with(ctx).Where("pool_id = ?", poolID).Find(&have).Error; err != nil {
			return err
		}
		old := make(map[string]models.SlurmForeignJob, len(have))
		for _, h := range have {
			old[h.SlurmJobID] = h
		}
		for _, j := range jobs {
			j.PoolID = poolID
			h, ok := old[j.SlurmJobID]
			delete(old, j.SlurmJobID)
			if ok {
				j.ID, j.CreatedAt = h.ID, h.CreatedAt
				if sameForeignJob(h, j) {
					continue
				}
			}
			if err := translate(tx.with(ctx).Save(&j).Error); err != nil {
				return err
			}
		}
		for _, h := range old {
			if err := tx.with(ctx).Delete(&models.SlurmForeignJob{}, h.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync the jobs outside Gantry of pool %d: %w", poolID, err)
	}
	return nil
}

func sameForeignJob(a, b models.SlurmForeignJob) bool {
	sameStart := a.StartedAt == nil && b.StartedAt == nil || a.StartedAt != nil && b.StartedAt != nil && a.StartedAt.Equal(*b.StartedAt)
	return sameStart && a.SubmittedAt.Equal(b.SubmittedAt) && a.Name == b.Name && a.User == b.User && a.Account == b.Account &&
		a.QOS == b.QOS && a.State == b.State && a.Reason == b.Reason && a.Nodes == b.Nodes && a.GPUs == b.GPUs &&
		a.GPUModel == b.GPUModel && a.CPUs == b.CPUs && a.MemoryMiB == b.MemoryMiB && a.TimeLimitSec == b.TimeLimitSec
}

// SlurmForeignJobs returns the jobs outside Gantry of one Slurm pool, or of every
// one when poolID is 0: running ones first, then by Slurm job id.
func (s *Store) SlurmForeignJobs(ctx context.Context, poolID int64) ([]models.SlurmForeignJob, error) {
	q := s.with(ctx)
	if poolID != 0 {
		q = q.Where("pool_id = ?", poolID)
	}
	var out []models.SlurmForeignJob
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("jobs outside Gantry: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := out[i].State == "RUNNING", out[j].State == "RUNNING"
		if ri != rj {
			return ri
		}
		return slurmIDLess(out[i].SlurmJobID, out[j].SlurmJobID)
	})
	return out, nil
}

// slurmIDLess orders Slurm job ids as numbers (shorter first, then by digits).
func slurmIDLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
