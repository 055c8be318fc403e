package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// submit submits every attempt placed on the pool that has no Slurm job yet.
func (p *SlurmPools) submit(ctx context.Context, sp *slurmPool) error {
	allocs, err := p.svc.store.SlurmAllocationsToSubmit(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if err := p.submitAttempt(ctx, sp, a); err != nil {
			return err
		}
	}
	return nil
}

// submitAttempt submits one attempt. Slurm's refusal (a bad partition, a job over a
// limit) or a job Slurm cannot run fails the job with Slurm's reason; a cluster that
// does not answer, or output that cannot be read, leaves the job waiting with the
// reason, and the submission is tried again on the next pass (Submit is idempotent,
// so a retry after a lost answer never submits twice). It fails only on the store.
func (p *SlurmPools) submitAttempt(ctx context.Context, sp *slurmPool, a models.Allocation) error {
	job, err := p.svc.store.JobByID(ctx, a.JobID)
	if err != nil {
		return err
	}
	if job.State != models.JobScheduled || job.Attempt != a.Attempt {
		return nil // cancelled or stopped meanwhile: its allocation ends with it
	}
	if released, err := p.releaseHeld(ctx, sp, job, a); err != nil || released {
		return err
	}
	spec, err := p.specOf(ctx, job, a)
	id := ""
	if err == nil {
		id, err = sp.b.Submit(ctx, spec)
	}
	if err == nil {
		return p.recordSubmission(ctx, sp, job, id)
	}
	// Slurm's words may quote the batch script, which exports the job's secrets.
	why, merr := maskedText(ctx, p.svc.store, job.ID, err.Error())
	if merr != nil {
		return merr
	}
	if slurm.Transient(err) {
		msg := fmt.Sprintf("attempt %d waits to be submitted to Slurm partition %s, which does not answer (retrying): %s", a.Attempt, sp.b.Config().Partition, why)
		return p.note(ctx, job, "slurm-unreachable", msg)
	}
	return p.reject(ctx, sp, job, err, why)
}

// releaseHeld runs an attempt as the job's Slurm job that Gantry held in Slurm's
// queue, if it has one on this pool: that job is released (scontrol release) and
// followed as this attempt, instead of a new submission. It reports whether the
// attempt is taken care of: released, or waiting while Slurm does not answer, or
// while the follower has yet to find the held job gone when Slurm gives its id to
// another job. When Slurm refuses (its job ended meanwhile), that job is cancelled
// and the attempt is submitted anew.
func (p *SlurmPools) releaseHeld(ctx context.Context, sp *slurmPool, job *models.Job, a models.Allocation) (bool, error) {
	rows, err := p.svc.store.SlurmJobsOfJob(ctx, job.ID)
	if err != nil {
		return false, err
	}
	var held *models.SlurmJob
	for i := range rows {
		if r := &rows[i]; r.PoolID == sp.pool.ID && !r.Done && heldInSlurm(r) && r.CurrentAttempt < a.Attempt {
			held = r
		}
	}
	if held == nil {
		return false, nil
	}
	err = sp.b.Release(ctx, held.SlurmJobID, job.ID, held.Attempt, a.Attempt)
	var rejected *slurm.RejectedError
	spared, nerr := p.spared(ctx, sp, job, err)
	switch {
	case nerr != nil || spared:
		// Another job holds the id: the follower's next poll finds Gantry's gone and
		// sends the attempt back to be submitted anew.
		return true, nerr
	case errors.As(err, &rejected):
		p.svc.log.Warn("cannot release a Slurm job Gantry held; submitting the attempt anew", "pool", sp.pool.Name, "slurm_job", held.SlurmJobID, "err", err)
		now := p.svc.now().UTC()
		held.SignalledAt = &now
		if err := sp.b.Cancel(ctx, held.SlurmJobID, job.ID, held.Attempt); err != nil {
			p.svc.log.Warn("cannot cancel a Slurm job Gantry no longer runs; trying again next pass", "pool", sp.pool.Name, "slurm_job", held.SlurmJobID, "err", err)
		}
		return false, p.svc.store.SaveSlurmJob(ctx, held)
	case err != nil:
		msg := fmt.Sprintf("attempt %d waits for Slurm to release job %s, which does not answer (retrying): %v", a.Attempt, held.SlurmJobID, err)
		return true, p.note(ctx, job, "slurm-unreachable", msg)
	}
	err = p.svc.store.InTx(ctx, func(tx *store.Store) error {
		if err := rebind(ctx, tx, held, a.Attempt); err != nil {
			return err
		}
		held.StopReason = ""
		if err := tx.SaveSlurmJob(ctx, held); err != nil {
			return err
		}
		msg := fmt.Sprintf("attempt %d released in Slurm: job %s, held in Slurm's queue until now, waits there again", a.Attempt, held.SlurmJobID)
		return tx.NoteJob(ctx, job.ID, job.State, "slurm-released", msg, actorOf(sp))
	})
	if err != nil {
		return false, fmt.Errorf("release Slurm job %s of job %d: %w", held.SlurmJobID, job.ID, err)
	}
	seen, err := decodeSeen(held.Seen)
	if err != nil {
		return false, fmt.Errorf("Slurm job %s of job %d: %w", held.SlurmJobID, job.ID, err)
	}
	sp.f.Track(slurm.Tracked{SlurmID: held.SlurmJobID, JobID: job.ID, Attempt: a.Attempt, Submitted: held.Attempt, Seen: seen})
	sp.rows[held.SlurmJobID] = held.ID
	return true, nil
}

// specOf is the batch job of an attempt: the GPU model comes from the devices the
// scheduler reserved, so Slurm is asked for the same GRES type.
func (p *SlurmPools) specOf(ctx context.Context, job *models.Job, a models.Allocation) (slurm.JobSpec, error) {
	class, err := p.svc.store.PriorityClassByName(ctx, job.PriorityClass)
	if errors.Is(err, store.ErrNotFound) {
		class, err = &models.PriorityClass{Name: job.PriorityClass}, nil
	}
	if err != nil {
		return slurm.JobSpec{}, err
	}
	shares, err := devicesOf(a)
	if err != nil {
		return slurm.JobSpec{}, err
	}
	model := ""
	if len(shares) > 0 {
		devs, err := p.svc.store.DevicesOfNode(ctx, a.NodeID)
		if err != nil {
			return slurm.JobSpec{}, err
		}
		for _, d := range devs {
			if d.UUID == shares[0].UUID {
				model = d.Model
			}
		}
	}
	spec, err := slurm.SpecOf(*job, a.Attempt, *class, model, job.ImageRef)
	if err != nil {
		return spec, err
	}
	// The batch script exports them: Slurm keeps it readable to the job's user and its admins.
	secrets, err := p.svc.store.JobSecretEnv(ctx, job.ID)
	if err != nil {
		return spec, err
	}
	for k, v := range secrets {
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	return spec, nil
}

// recordSubmission keeps the Slurm job of an attempt and follows it from the next poll.
func (p *SlurmPools) recordSubmission(ctx context.Context, sp *slurmPool, job *models.Job, id string) error {
	row := &models.SlurmJob{PoolID: sp.pool.ID, JobID: job.ID, Attempt: job.Attempt, CurrentAttempt: job.Attempt, SlurmJobID: id}
	err := p.svc.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateSlurmJob(ctx, row); err != nil {
			return err
		}
		msg := fmt.Sprintf("attempt %d submitted to Slurm partition %s as job %s", job.Attempt, sp.b.Config().Partition, id)
		return tx.NoteJob(ctx, job.ID, job.State, "slurm-submitted", msg, actorOf(sp))
	})
	if err != nil {
		return fmt.Errorf("record Slurm job %s of job %d: %w", id, job.ID, err)
	}
	sp.f.Track(slurm.Tracked{SlurmID: id, JobID: job.ID, Attempt: job.Attempt, Submitted: job.Attempt})
	sp.rows[id] = row.ID
	return nil
}

// reject fails a job that Slurm refused, or that a Slurm pool cannot run, with why:
// cause's text with the job's secret values masked.
func (p *SlurmPools) reject(ctx context.Context, sp *slurmPool, job *models.Job, cause error, why string) error {
	var fe *models.FieldError
	msg := fmt.Sprintf("attempt %d cannot run on Slurm partition %s: %s", job.Attempt, sp.b.Config().Partition, why)
	if errors.As(cause, &fe) {
		msg = fmt.Sprintf("attempt %d cannot run on Slurm partition %s: %s %s", job.Attempt, sp.b.Config().Partition, fe.Field, fe.Message)
	}
	err := p.svc.store.InTx(ctx, func(tx *store.Store) error {
		if err := p.svc.endSlurmAttempt(ctx, tx, job.ID, job.Attempt, nil, "", nil); err != nil {
			return err
		}
		err := tx.TransitionJob(ctx, job.ID, store.Transition{From: job.State, To: models.JobFailed, Reason: "slurm-rejected", Message: msg, Actor: actorOf(sp)})
		if err != nil {
			return err
		}
		return p.svc.audit.In(tx).Append(audit.WithActor(ctx, audit.System()), audit.Entry{Action: "job.slurm_rejected", ObjectType: "job",
			ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID, Detail: map[string]string{"pool": sp.pool.Name, "reason": why}})
	})
	if errors.Is(err, store.ErrStale) {
		return nil // the job moved on meanwhile
	}
	if err != nil {
		return fmt.Errorf("fail job %d refused by Slurm: %w", job.ID, err)
	}
	p.svc.Kick()
	return nil
}

// note records what Slurm says of a job that stays in its state, once per message.
func (p *SlurmPools) note(ctx context.Context, job *models.Job, reason, msg string) error {
	if job.PendingReason == msg {
		return nil
	}
	err := p.svc.store.NoteJob(ctx, job.ID, job.State, reason, msg, "slurm")
	if errors.Is(err, store.ErrStale) {
		return nil
	}
	return err
}

func actorOf(sp *slurmPool) string { return "slurm:" + sp.pool.Name }
