package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// clusterMovedPrefix begins the reason the leader gives the nodes of a Slurm pool
// whose slurm.conf reaches another cluster than the one its open jobs are on
// (clusterMovedError); the pool is marked so too (models.SlurmClusterMove).
const clusterMovedPrefix = "Slurm pool reaches another cluster: "

// ForgetSlurmJobs gives up the open Slurm jobs of a Slurm pool that stands still
// because its slurm.conf leads to another cluster than theirs (the leader marked it
// so: models.SlurmClusterMove), for a cluster that is gone for good: their Slurm job
// ids mean nothing, or another job, on the cluster the pool reaches now. Each job
// whose current attempt waited or ran there fails as lost, saying so and who forgot
// it; a job held in Gantry stays held (it is submitted anew once released); none of
// those Slurm jobs is followed, stopped or read from again, and what ran is charged up
// to the last time the leader saw the old cluster follow it (the mark's LastSeenAt),
// not to the moment of forgetting. Audited (pool.slurm_jobs_forgotten). The pool takes
// the new cluster's nodes on its next pass. It returns how many Slurm jobs were
// forgotten.
func (s *Service) ForgetSlurmJobs(ctx context.Context, poolName, actor string) (int, error) {
	forgotten := 0
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		pool, err := tx.NodePoolByName(ctx, poolName)
		if err != nil {
			return err
		}
		if pool.Provider != "slurm" {
			return models.Invalid("pool", "pool %s is a %s pool: only a Slurm pool has Slurm jobs to forget", pool.Name, pool.Provider)
		}
		move, err := tx.SlurmClusterMove(ctx, pool.ID)
		if errors.Is(err, store.ErrNotFound) {
			return models.Invalid("pool", "pool %s is not held up by a slurm.conf that leads to another cluster: Gantry still follows its jobs, so there is nothing to forget", pool.Name)
		}
		if err != nil {
			return err
		}
		cluster, reason := move.JobsCluster, move.Reason
		rows, err := tx.OpenSlurmJobs(ctx, pool.ID)
		if err != nil {
			return err
		}
		var jobIDs []int64
		var slurmIDs []string
		for i := range rows {
			r := &rows[i]
			if r.Done && r.LogsDone {
				continue
			}
			wasDone := r.Done
			r.Done, r.LogsDone = true, true
			if err := tx.SaveSlurmJob(ctx, r); err != nil {
				return err
			}
			if wasDone {
				continue // over, only its output was still being read
			}
			forgotten++
			jobIDs, slurmIDs = append(jobIDs, r.JobID), append(slurmIDs, r.SlurmJobID)
			if err := s.forgetSlurmJob(ctx, tx, pool.Name, cluster, actor, move.LastSeenAt, r); err != nil {
				return err
			}
		}
		if forgotten == 0 {
			return models.Invalid("pool", "pool %s has no open Slurm job to forget", pool.Name)
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "pool.slurm_jobs_forgotten", ObjectType: "pool", ObjectID: pool.Name,
			Detail: map[string]any{"cluster": cluster, "reason": reason, "jobs": jobIDs, "slurm_jobs": slurmIDs, "charged_until": move.LastSeenAt}})
	})
	if err != nil {
		return 0, fmt.Errorf("forget the Slurm jobs of pool %s: %w", poolName, err)
	}
	s.signalEnded()
	s.Kick()
	return forgotten, nil
}

// forgetSlurmJob ends what Gantry knew of one Slurm job on the cluster a pool no
// longer reaches, on its Gantry job; what ran is charged until seen.
func (s *Service) forgetSlurmJob(ctx context.Context, tx *store.Store, pool, cluster, actor string, seen time.Time, r *models.SlurmJob) error {
	job, err := tx.JobByID(ctx, r.JobID)
	if err != nil {
		return err
	}
	forgot := fmt.Sprintf("Slurm job %s on cluster %s, which pool %s no longer reaches, forgotten by %s", r.SlurmJobID, cluster, pool, actor)
	const untracked = "if it still runs there, Gantry no longer follows, stops or charges it"
	switch {
	case job.Attempt != r.CurrentAttempt || models.IsTerminal(job.State):
		return endForgotten(ctx, tx, r, seen)
	case job.State == models.JobHeld:
		return tx.NoteJob(ctx, job.ID, job.State, "slurm-forgotten", forgot+"; "+untracked+"; the job stays held, and is submitted anew once released", actor)
	case job.State == models.JobQueued:
		return tx.NoteJob(ctx, job.ID, job.State, "slurm-forgotten", forgot+"; "+untracked+"; the job is submitted anew once placed", actor)
	}
	if err := endForgotten(ctx, tx, r, seen); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s; charged until %s UTC, when Gantry last saw that cluster follow it; %s", forgot, seen.UTC().Format(time.DateTime), untracked)
	return tx.TransitionJob(ctx, job.ID, store.Transition{From: job.State, To: models.JobFailed, Reason: "lost", Message: msg, Actor: actor})
}

// endForgotten ends the allocations of a forgotten Slurm job's attempt at seen, or at
// its start for one that started later (Slurm's start, which Gantry saw, so no later
// than its last sighting but for the clocks).
func endForgotten(ctx context.Context, tx *store.Store, r *models.SlurmJob, seen time.Time) error {
	allocs, err := allocationsOfAttempt(ctx, tx, r.JobID, r.CurrentAttempt)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if a.State == models.AllocEnded {
			continue
		}
		end := seen.UTC()
		if a.StartedAt != nil && a.StartedAt.After(end) {
			end = a.StartedAt.UTC()
		}
		if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, store.AllocationChange{State: models.AllocEnded, EndedAt: &end}); err != nil {
			return err
		}
	}
	return nil
}
