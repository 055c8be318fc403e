package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// apply applies one event of a followed Slurm job to its Gantry job, in one
// transaction with what the follower saw, so that a restart neither repeats nor
// misses it. An error makes the follower hand the event again on the next poll.
func (p *SlurmPools) apply(ctx context.Context, sp *slurmPool, e slurm.Event) error {
	rowID, ok := sp.rows[e.SlurmID]
	if !ok {
		return fmt.Errorf("Slurm job %s is not one of pool %s", e.SlurmID, sp.pool.Name)
	}
	if e.Kind == slurm.EventRunEnded || e.Kind == slurm.EventVanished {
		// What the run wrote belongs to the attempt it ran as: store it before the
		// job moves on to its next attempt.
		if err := p.shipRow(ctx, sp, rowID); err != nil {
			return err
		}
	}
	var cancel, ended bool
	var job *models.Job
	var submitted int
	err := p.svc.store.InTx(ctx, func(tx *store.Store) error {
		cancel, ended = false, false
		row, err := tx.SlurmJobByID(ctx, rowID)
		if err != nil {
			return err
		}
		submitted = row.Attempt
		job, err = tx.JobByID(ctx, row.JobID)
		if err != nil {
			return err
		}
		if row.StopReason != "" && (e.Kind == slurm.EventRunEnded && (!e.Final || e.Record.State == "CANCELLED") || vanishedStopping(e, row, job)) {
			// Gantry stopped this run (a cancel, or a checkpoint-stop for preemption,
			// drain, governance or a hold): it ends as Gantry asked, and never runs again.
			cancel, ended = !e.Final, true
			if err := p.stoppedRun(ctx, tx, sp, row, job, e); err != nil {
				return err
			}
		} else {
			if cancel, ended, err = p.decide(ctx, tx, sp, row, job, e); err != nil {
				return err
			}
		}
		row.Seen = encodeSeen(e.Seen)
		row.Done = row.Done || e.Final
		return tx.SaveSlurmJob(ctx, row)
	})
	if err != nil {
		return fmt.Errorf("apply %s of Slurm job %s: %w", e.Kind, e.SlurmID, err)
	}
	if ended {
		p.svc.signalEnded()
		p.svc.Kick()
	}
	if cancel {
		err := sp.b.Cancel(ctx, e.SlurmID, job.ID, submitted)
		if spared, err := p.spared(ctx, sp, job, err); err != nil || spared {
			return err
		}
		if err != nil {
			p.svc.log.Warn("cannot cancel a Slurm job Gantry no longer runs; trying again next pass", "pool", sp.pool.Name, "slurm_job", e.SlurmID, "err", err)
		}
	}
	return nil
}

// vanishedStopping says whether e is a Slurm job vanishing while the attempt it runs
// is being stopped by Gantry to checkpoint: it ends as that stop says (a held job
// stays held), not as lost.
func vanishedStopping(e slurm.Event, row *models.SlurmJob, job *models.Job) bool {
	return e.Kind == slurm.EventVanished && job.State == models.JobPreempting && job.Attempt == row.CurrentAttempt
}

// decide applies services/slurm's Decide to the job. It reports whether Slurm's job
// must be cancelled, and whether allocations ended.
func (p *SlurmPools) decide(ctx context.Context, tx *store.Store, sp *slurmPool, row *models.SlurmJob, job *models.Job, e slurm.Event) (cancel, ended bool, err error) {
	state := job.State
	if job.Attempt != row.CurrentAttempt {
		state = models.JobCancelled // Gantry moved on to a later attempt: this run is over for it
	}
	d, derr := slurm.Decide(state, e)
	if d.Charge != nil {
		if err := p.svc.endSlurmAttempt(ctx, tx, row.JobID, row.CurrentAttempt, d.Charge, "", nil); err != nil {
			return false, false, err
		}
		ended = true
	}
	if derr != nil {
		// The Gantry job moved on in a way Slurm's news cannot change (it was
		// cancelled meanwhile, say): keep the news as a note, charge what ran.
		p.svc.log.Warn("Slurm event does not apply to the Gantry job", "job", job.ID, "err", derr)
		return d.Cancel, ended, nil
	}
	if d.Note != "" && (state == models.JobScheduled || state == models.JobRunning || state == models.JobHeld) && job.PendingReason != d.Note {
		if err := tx.NoteJob(ctx, job.ID, state, "slurm-"+string(e.Kind), d.Note, actorOf(sp)); err != nil {
			return false, false, err
		}
	}
	from := state
	for _, st := range d.Steps {
		if err := p.step(ctx, tx, sp, row, job, from, st, e); err != nil {
			return false, false, err
		}
		from = st.To
		ended = ended || models.IsTerminal(st.To) || st.To == models.JobQueued
	}
	if len(d.Steps) > 0 && !d.Steps[len(d.Steps)-1].NextAttempt && d.Charge == nil && !isRunning(d.Steps) {
		// The job left Slurm without a run to charge (cancelled while pending, lost):
		// its reservation ends now.
		if err := p.svc.endSlurmAttempt(ctx, tx, row.JobID, row.CurrentAttempt, nil, "", nil); err != nil {
			return false, false, err
		}
	}
	return d.Cancel, ended, nil
}

func isRunning(steps []slurm.Step) bool {
	return len(steps) == 1 && steps[0].To == models.JobRunning
}

// step applies one state change that Decide chose.
func (p *SlurmPools) step(ctx context.Context, tx *store.Store, sp *slurmPool, row *models.SlurmJob, job *models.Job, from string, st slurm.Step, e slurm.Event) error {
	t := store.Transition{From: from, To: st.To, Reason: st.Reason, Message: st.Message, Actor: actorOf(sp), ExitCode: st.ExitCode}
	switch {
	case st.To == models.JobRunning:
		if err := p.started(ctx, tx, sp, row, e); err != nil {
			return err
		}
	case st.To == models.JobFailed && job.Retries < job.MaxRetries:
		used := job.Retries + 1
		t.To, t.Retries, t.ExitCode = models.JobQueued, &used, nil
		t.Message = fmt.Sprintf("%s; retry %d of %d", st.Message, used, job.MaxRetries)
	case st.To == models.JobFailed && job.MaxRetries > 0:
		t.Message = st.Message + "; " + retriesUsed(job.MaxRetries)
	case st.NextAttempt:
		next, err := p.nextAttempt(ctx, tx, row)
		if err != nil {
			return err
		}
		t.Attempt = next
	}
	return tx.TransitionJob(ctx, job.ID, t)
}

// started marks the attempt's allocations running from Slurm's start time, on the
// nodes Slurm chose: Slurm places the job, so its allocation moves there from the
// node the scheduler reserved, when that node has the GPUs free.
func (p *SlurmPools) started(ctx context.Context, tx *store.Store, sp *slurmPool, row *models.SlurmJob, e slurm.Event) error {
	allocs, err := allocationsOfAttempt(ctx, tx, row.JobID, row.CurrentAttempt)
	if err != nil {
		return err
	}
	hosts, err := slurm.ExpandHostlist(e.NodeList)
	if err != nil {
		p.svc.log.Warn("cannot read where Slurm started a job", "slurm_job", e.SlurmID, "err", err)
	}
	start := e.Seen.Start
	for i, a := range allocs {
		if i < len(hosts) && len(hosts) == len(allocs) {
			if err := p.moveTo(ctx, tx, sp, &a, slurm.NodeName(sp.pool.Name, hosts[i])); err != nil {
				return err
			}
		}
		if a.State != models.AllocPending {
			continue
		}
		if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, store.AllocationChange{State: models.AllocRunning, StartedAt: &start}); err != nil {
			return err
		}
	}
	return nil
}

// moveTo moves an allocation to the Gantry node of the Slurm node its run started on,
// taking GPUs of the same models that no other allocation there holds. When the
// node is unknown or has no such GPUs free (Gantry's view lags Slurm's), the
// allocation stays where it was reserved.
func (p *SlurmPools) moveTo(ctx context.Context, tx *store.Store, sp *slurmPool, a *models.Allocation, name string) error {
	if a.NodeID != 0 {
		if cur, err := tx.NodeByID(ctx, a.NodeID); err == nil && cur.Name == name {
			return nil
		}
	}
	node, err := tx.NodeByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) || err == nil && (node.PoolID == nil || *node.PoolID != sp.pool.ID) {
		return nil
	}
	if err != nil {
		return err
	}
	want, err := devicesOf(*a)
	if err != nil {
		return err
	}
	models_, err := p.deviceModels(ctx, tx, a.NodeID)
	if err != nil {
		return err
	}
	devs, err := tx.DevicesOfNode(ctx, node.ID)
	if err != nil {
		return err
	}
	others, err := tx.ActiveAllocations(ctx, node.ID)
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, o := range others {
		shares, err := devicesOf(o)
		if err != nil {
			return err
		}
		for _, s := range shares {
			taken[s.UUID] = true
		}
	}
	moved := make([]agentapi.Device, 0, len(want))
	for _, w := range want {
		found := false
		for _, d := range devs {
			if !taken[d.UUID] && d.Model == models_[w.UUID] {
				moved = append(moved, agentapi.Device{UUID: d.UUID, Milli: w.Milli, MemoryMiB: d.MemoryMiB})
				taken[d.UUID], found = true, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	raw, err := json.Marshal(moved)
	if err != nil {
		return err
	}
	if err := tx.MoveAllocation(ctx, a.ID, node.ID, string(raw), a.GPUMilli); err != nil {
		return err
	}
	a.NodeID, a.Devices = node.ID, string(raw)
	return nil
}

func (p *SlurmPools) deviceModels(ctx context.Context, tx *store.Store, nodeID int64) (map[string]string, error) {
	devs, err := tx.DevicesOfNode(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(devs))
	for _, d := range devs {
		out[d.UUID] = d.Model
	}
	return out, nil
}

// nextAttempt binds the job's next attempt to the same Slurm job, which Slurm
// requeued and will run again by itself: new allocations where the last ones were,
// and the attempt's output starting where the last one's ended.
func (p *SlurmPools) nextAttempt(ctx context.Context, tx *store.Store, row *models.SlurmJob) (int, error) {
	allocs, err := allocationsOfAttempt(ctx, tx, row.JobID, row.CurrentAttempt)
	if err != nil {
		return 0, err
	}
	next := row.CurrentAttempt + 1
	fresh := make([]models.Allocation, len(allocs))
	for i, a := range allocs {
		fresh[i] = models.Allocation{JobID: a.JobID, Attempt: next, Replica: a.Replica, NodeID: a.NodeID, Devices: a.Devices,
			GPUMilli: a.GPUMilli, CPUMilli: a.CPUMilli, MemoryMiB: a.MemoryMiB, ScratchMiB: a.ScratchMiB, State: models.AllocPending}
	}
	if err := tx.CreateAllocations(ctx, fresh); err != nil {
		return 0, err
	}
	if err := rebind(ctx, tx, row, next); err != nil {
		return 0, err
	}
	return next, nil
}

// rebind makes a Slurm job run a later attempt of its job: that attempt's output
// starts in the job's log files where the current one's ended.
func rebind(ctx context.Context, tx *store.Store, row *models.SlurmJob, attempt int) error {
	for _, stream := range []string{agentapi.StreamStdout, agentapi.StreamStderr} {
		end, err := tx.LogEnd(ctx, row.JobID, row.CurrentAttempt, 0, stream)
		if err != nil {
			return err
		}
		if stream == agentapi.StreamStdout {
			row.StdoutBase += end
		} else {
			row.StderrBase += end
		}
	}
	row.CurrentAttempt = attempt
	return nil
}

// stoppedRun ends a run that Gantry stopped: its allocations end with the reason
// Gantry gave (a checkpoint-stop requeues the job to resume from its checkpoint, a
// cancelled job stays cancelled), charged with what Slurm accounted (until now for a
// Slurm job that vanished).
func (p *SlurmPools) stoppedRun(ctx context.Context, tx *store.Store, sp *slurmPool, row *models.SlurmJob, job *models.Job, e slurm.Event) error {
	var run *slurm.Run
	if e.Record != nil && e.Record.Ran() {
		run = e.Record
	}
	if err := p.svc.endSlurmAttempt(ctx, tx, row.JobID, row.CurrentAttempt, run, row.StopReason, nil); err != nil {
		return err
	}
	if job.Attempt != row.CurrentAttempt {
		return nil
	}
	_, err := p.svc.settle(ctx, tx, job.ID, job.Attempt, e.Message)
	return err
}

// endSlurmAttempt ends the allocations of an attempt on a Slurm pool. run, when the
// attempt ran, gives their start and end from Slurm's accounting, so that the ledger
// charges what Slurm allocated; stopReason, when set, says why Gantry ended them.
func (s *Service) endSlurmAttempt(ctx context.Context, tx *store.Store, jobID int64, attempt int, run *slurm.Run, stopReason string, exit *int) error {
	allocs, err := allocationsOfAttempt(ctx, tx, jobID, attempt)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	for _, a := range allocs {
		ch := store.AllocationChange{State: models.AllocEnded, ExitCode: exit}
		if stopReason != "" {
			ch.StopReason = &stopReason
		}
		switch {
		case run != nil:
			start, end := run.Start.UTC(), run.End.UTC()
			if run.End.IsZero() {
				end = now
			}
			ch.StartedAt, ch.EndedAt = &start, &end
			if ch.ExitCode == nil {
				code := run.ExitCode
				ch.ExitCode = &code
			}
		case a.State == models.AllocEnded:
			continue
		default:
			ch.EndedAt = &now
		}
		if err := tx.UpdateAllocation(ctx, a.ID, []string{a.State}, ch); err != nil {
			return err
		}
	}
	return nil
}
