package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// slurmKillRetry is how often a Slurm job that Gantry cancelled is cancelled again
// while Slurm still reports it (a lost answer, a node slow to kill it).
const slurmKillRetry = 30 * time.Second

// stopUnwanted stops the Slurm jobs that Gantry no longer wants to run: a cancelled
// job (scancel), a preempted, drained or governance-stopped one (USR1 to checkpoint,
// then scancel after its class's checkpoint grace), and one whose attempt Gantry
// has replaced. A job held while it waited in Slurm's queue is held there (scontrol
// hold), and stays so while it is held or waits to be placed again; placed again on
// this pool, submit releases it. What they ran is charged when Slurm reports their end.
func (p *SlurmPools) stopUnwanted(ctx context.Context, sp *slurmPool, rows []models.SlurmJob, now time.Time) error {
	toSubmit, err := p.svc.store.SlurmAllocationsToSubmit(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	placedHere := make(map[int64]int, len(toSubmit))
	for _, a := range toSubmit {
		placedHere[a.JobID] = a.Attempt
	}
	for i := range rows {
		r := &rows[i]
		if r.Done {
			continue
		}
		job, err := p.svc.store.JobByID(ctx, r.JobID)
		if err != nil {
			return err
		}
		if heldInSlurm(r) && keepHeld(job, r, placedHere) {
			continue
		}
		allocs, err := allocationsOfAttempt(ctx, p.svc.store, r.JobID, r.CurrentAttempt)
		if err != nil {
			return err
		}
		reason, checkpoint := unwanted(job, r, allocs)
		switch {
		case reason == "":
			continue
		case reason == stopHeldInSlurm && r.StopReason == "":
			if err := p.hold(ctx, sp, r, job, now); err != nil {
				return err
			}
			continue
		case heldInSlurm(r):
			// Held in Slurm and no longer wanted there (cancelled, or placed elsewhere).
			r.StopReason = ""
		}
		wait := slurmKillRetry
		if checkpoint {
			if wait, err = p.checkpointGrace(ctx, job); err != nil {
				return err
			}
		}
		switch {
		case r.StopReason == "":
			seen, err := decodeSeen(r.Seen)
			if err != nil {
				return err
			}
			if checkpoint && !seen.Start.IsZero() {
				err = sp.b.Checkpoint(ctx, r.SlurmJobID, r.JobID, r.Attempt)
			} else {
				err = sp.b.Cancel(ctx, r.SlurmJobID, r.JobID, r.Attempt)
			}
			// A Slurm job id that another job holds now is left alone, as if signalled:
			// the follower's poll finds Gantry's job gone.
			spared, nerr := p.spared(ctx, sp, job, err)
			if nerr != nil {
				return nerr
			}
			if err != nil && !spared {
				p.svc.log.Warn("cannot stop a Slurm job; trying again next pass", "pool", sp.pool.Name, "slurm_job", r.SlurmJobID, "err", err)
				continue
			}
			r.StopReason, r.SignalledAt = reason, &now
		case r.SignalledAt == nil || now.Sub(*r.SignalledAt) >= wait:
			err := sp.b.Cancel(ctx, r.SlurmJobID, r.JobID, r.Attempt)
			spared, nerr := p.spared(ctx, sp, job, err)
			if nerr != nil {
				return nerr
			}
			if err != nil && !spared {
				p.svc.log.Warn("cannot cancel a Slurm job; trying again next pass", "pool", sp.pool.Name, "slurm_job", r.SlurmJobID, "err", err)
				continue
			}
			r.SignalledAt = &now
		default:
			continue
		}
		if err := p.svc.store.SaveSlurmJob(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// spared says whether err is Slurm giving the id of a job's Slurm job to another job
// (Slurm's ids restarted): Gantry did nothing to that one, and notes so on the job.
// Gantry's own is gone from the controller; the follower's poll ends it.
func (p *SlurmPools) spared(ctx context.Context, sp *slurmPool, job *models.Job, err error) (bool, error) {
	var other *slurm.OtherJobError
	if !errors.As(err, &other) {
		return false, nil
	}
	p.svc.log.Warn("a Slurm job id Gantry follows is another job's; leaving that job alone", "pool", sp.pool.Name, "slurm_job", other.ID, "job", job.ID, "err", err)
	return true, p.note(ctx, job, "slurm-id-reused", err.Error())
}

// heldInSlurm says whether Gantry holds the Slurm job in Slurm's queue: stopped for
// a hold and not cancelled since (a hold that came too late is a cancel).
func heldInSlurm(r *models.SlurmJob) bool {
	return r.StopReason == stopHeldInSlurm && r.SignalledAt == nil
}

// keepHeld says whether a Slurm job held in Slurm's queue stays there: its job is
// held, or was released and waits to be placed again, or was placed again on this
// pool (placedHere holds the attempts waiting to be submitted, by job).
func keepHeld(job *models.Job, r *models.SlurmJob, placedHere map[int64]int) bool {
	switch {
	case models.IsTerminal(job.State):
		return false
	case job.Attempt == r.CurrentAttempt:
		return job.State == models.JobHeld || job.State == models.JobQueued
	}
	return placedHere[job.ID] == job.Attempt
}

// hold holds a Slurm job in Slurm's queue for a job Gantry held. When Slurm started
// it before the hold reached it, the hold comes too late: the run is cancelled, and
// the job, held in Gantry, is submitted anew once released. When Slurm gives the id
// to another job, that one is left alone and the job says so; the follower's poll
// then finds Gantry's gone.
func (p *SlurmPools) hold(ctx context.Context, sp *slurmPool, r *models.SlurmJob, job *models.Job, now time.Time) error {
	err := sp.b.Hold(ctx, r.SlurmJobID, r.JobID, r.Attempt)
	var rejected *slurm.RejectedError
	spared, nerr := p.spared(ctx, sp, job, err)
	switch {
	case nerr != nil:
		return nerr
	case spared:
	case errors.As(err, &rejected):
		if err := sp.b.Cancel(ctx, r.SlurmJobID, r.JobID, r.Attempt); err != nil {
			p.svc.log.Warn("cannot cancel a Slurm job that started before Gantry's hold; trying again next pass", "pool", sp.pool.Name, "slurm_job", r.SlurmJobID, "err", err)
			return nil
		}
		r.SignalledAt = &now
	case err != nil:
		p.svc.log.Warn("cannot hold a Slurm job; trying again next pass", "pool", sp.pool.Name, "slurm_job", r.SlurmJobID, "err", err)
		return nil
	}
	r.StopReason = stopHeldInSlurm
	return p.svc.store.SaveSlurmJob(ctx, r)
}

// unwanted says why Gantry no longer wants a Slurm job to run ("" when it does),
// and whether it should checkpoint first.
func unwanted(job *models.Job, r *models.SlurmJob, allocs []models.Allocation) (reason string, checkpoint bool) {
	for _, a := range allocs {
		if (a.State == models.AllocStopping || a.State == models.AllocEnded) && a.StopReason != "" {
			reason, checkpoint = a.StopReason, checkpoints(a.StopReason)
		}
	}
	switch {
	case job.Attempt != r.CurrentAttempt:
		return "superseded", false
	case models.IsTerminal(job.State):
		return agentapi.StopCancel, false
	case reason != "":
		return reason, checkpoint
	case job.State != models.JobScheduled && job.State != models.JobRunning:
		return "requeued", false
	}
	return "", false
}

// checkpointGrace is how long a job of its class has to save a checkpoint before
// it is stopped (Slurm's own default when the class gives none).
func (p *SlurmPools) checkpointGrace(ctx context.Context, job *models.Job) (time.Duration, error) {
	class, err := p.svc.store.PriorityClassByName(ctx, job.PriorityClass)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return time.Minute, nil
	case err != nil:
		return 0, fmt.Errorf("class of job %d: %w", job.ID, err)
	case class.CheckpointGraceSec <= 0:
		return time.Minute, nil
	}
	return time.Duration(class.CheckpointGraceSec) * time.Second, nil
}
