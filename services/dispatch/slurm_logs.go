package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// shipLogs stores what the pool's jobs wrote since the last pass, so that the job's
// output reads (and follows) through Gantry's log API like an agent job's.
func (p *SlurmPools) shipLogs(ctx context.Context, sp *slurmPool) error {
	rows, err := p.svc.store.OpenSlurmJobs(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := p.shipRow(ctx, sp, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// shipRow stores up to LogChunk new bytes of each of a Slurm job's log files, as the
// output of the attempt it runs now, up to the log limit. Its files are written through the directory
// the pool configures (log_dir), shared by Slurm's nodes and this server; each run
// appends to them, and each attempt's output starts where the last one's ended.
func (p *SlurmPools) shipRow(ctx context.Context, sp *slurmPool, rowID int64) error {
	r, err := p.svc.store.SlurmJobByID(ctx, rowID)
	if err != nil {
		return err
	}
	secrets, err := p.svc.store.JobSecretEnv(ctx, r.JobID)
	if err != nil {
		return err
	}
	m := newMasker(secrets)
	stdout, stderr := sp.b.Config().LogPaths(r.JobID, r.Attempt)
	complete := true
	for _, f := range []struct {
		stream, path string
		base         int64
	}{{agentapi.StreamStdout, stdout, r.StdoutBase}, {agentapi.StreamStderr, stderr, r.StderrBase}} {
		end, err := p.svc.store.LogEnd(ctx, r.JobID, r.CurrentAttempt, 0, f.stream)
		if err != nil {
			return err
		}
		if end >= p.svc.cfg.LogLimit {
			continue // the rest is not kept
		}
		data, err := slurm.ReadLog(f.path, f.base+end, p.cfg.LogChunk)
		if err != nil {
			p.svc.log.Warn("cannot read a Slurm job's log; is log_dir shared with the Slurm nodes?", "pool", sp.pool.Name, "slurm_job", r.SlurmJobID, "err", err)
			return nil
		}
		if len(data) == p.cfg.LogChunk {
			complete = false
		}
		if len(data) == 0 {
			continue
		}
		err = appendLog(ctx, p.svc.store, models.JobLogChunk{JobID: r.JobID, Attempt: r.CurrentAttempt, Stream: f.stream, Offset: end, Data: data}, m, p.svc.cfg.LogLimit)
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("store output of Slurm job %s: %w", r.SlurmJobID, err)
		}
	}
	if r.Done && complete {
		r.LogsDone = true
		return p.svc.store.SaveSlurmJob(ctx, r)
	}
	return nil
}
