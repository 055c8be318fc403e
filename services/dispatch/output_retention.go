package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// ReasonLogRetention is the reason of the timeline event that says a job's output was
// deleted for its age (Config.LogRetention).
const ReasonLogRetention = "log retention"

// MinLogRetention is the shortest Config.LogRetention other than 0.
const MinLogRetention = 24 * time.Hour

// retentionDoneKey is the setting that says where the last whole pass of the output
// retention stopped: every job that ended before that instant has had its output
// deleted, so a pass reads only the jobs that ended since.
const retentionDoneKey = "output_retention_done_before"

// retentionBatch is how many jobs a pass reads, notes and empties at a time.
const retentionBatch = 200

// LogRetention is how long a job's output is kept after the job ends; 0 for good.
func (s *Service) LogRetention() time.Duration { return s.cfg.LogRetention }

// LogLimit is the most output kept of one stream of one replica of an attempt, in bytes.
func (s *Service) LogLimit() int64 { return s.cfg.LogLimit }

// DeleteAgedOutput deletes, at once and then every `every` until ctx ends, the output
// of the jobs that ended longer ago than Config.LogRetention; with 0 it does nothing.
func (s *Service) DeleteAgedOutput(ctx context.Context, every time.Duration) {
	if s.cfg.LogRetention == 0 {
		return
	}
	for {
		jobs, chunks, err := s.DeleteAgedOutputOnce(ctx)
		switch {
		case err != nil:
			s.log.Warn("deleting the output of jobs past the log retention", "jobs", jobs, "err", err)
		case jobs > 0:
			s.log.Info("deleted the output of jobs past the log retention", "jobs", jobs, "chunks", chunks, "kept", KeptFor(s.cfg.LogRetention))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// DeleteAgedOutputOnce is one pass of DeleteAgedOutput. Each job's timeline says its
// output was deleted and why, and the audit log records it, once, in the transaction
// that decides it (store.DeleteJobOutput). It returns how many jobs' output and how
// many chunks it deleted.
func (s *Service) DeleteAgedOutputOnce(ctx context.Context) (jobs int, chunks int64, err error) {
	if s.cfg.LogRetention == 0 {
		return 0, 0, nil
	}
	now := s.now().UTC()
	before := now.Add(-s.cfg.LogRetention)
	var from time.Time
	switch v, ok, err := s.store.Setting(ctx, retentionDoneKey); {
	case err != nil:
		return 0, 0, err
	case ok:
		if from, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return 0, 0, fmt.Errorf("setting %s: %w", retentionDoneKey, err)
		}
	}
	if from.After(now) {
		// Written by a clock that ran ahead: read every ended job again rather than
		// none until that clock's time comes.
		from = time.Time{}
	}
	if !from.Before(before) {
		return 0, 0, nil // the retention grew: nothing has aged past it since the last pass
	}
	message := "output deleted: a job's output is kept " + KeptFor(s.cfg.LogRetention) + " after it ends"
	actx := audit.WithActor(ctx, audit.System())
	for {
		batch, err := s.store.EndedJobsWithOutput(ctx, from, before, retentionBatch)
		if err != nil {
			return jobs, chunks, err
		}
		n, err := s.store.DeleteJobOutput(ctx, batch, ReasonLogRetention, message, "system", func(tx *store.Store, noted []store.EndedJob) error {
			if len(noted) == 0 {
				return nil
			}
			entries := make([]audit.Entry, len(noted))
			for i, j := range noted {
				entries[i] = audit.Entry{Action: "job.output_deleted", ObjectType: "job", ObjectID: strconv.FormatInt(j.ID, 10), ProjectID: &j.ProjectID,
					Detail: map[string]string{"ended_at": j.FinishedAt.UTC().Format(time.RFC3339), "kept": KeptFor(s.cfg.LogRetention)}}
			}
			return s.audit.In(tx).AppendAll(actx, entries)
		})
		if err != nil {
			return jobs, chunks, err
		}
		jobs, chunks = jobs+len(batch), chunks+n
		if len(batch) < retentionBatch {
			break
		}
		from = batch[len(batch)-1].FinishedAt // not back over the jobs done
	}
	return jobs, chunks, s.store.PutSetting(ctx, retentionDoneKey, before.Format(time.RFC3339Nano))
}

// keptFor writes a retention in days where it is whole days.
func KeptFor(d time.Duration) string {
	switch days := d / (24 * time.Hour); {
	case d%(24*time.Hour) != 0:
		return d.String()
	case days == 1:
		return "1 day"
	default:
		return strconv.FormatInt(int64(days), 10) + " days"
	}
}

// agedOut says whether the output of a's job is past Config.LogRetention, so that
// output an agent ships for it now is not kept: an agent offline since the attempt
// ended would otherwise store it again after the leader deleted it, and it would stay,
// since passes read only jobs that ended since the last. The job is read only when the
// attempt itself ended longer ago than the retention: a job ends after its attempts.
func (s *Service) agedOut(ctx context.Context, a *models.Allocation) (bool, error) {
	if s.cfg.LogRetention == 0 || a.EndedAt == nil || s.now().Sub(*a.EndedAt) <= s.cfg.LogRetention {
		return false, nil
	}
	j, err := s.store.JobByID(ctx, a.JobID)
	if err != nil {
		return false, err
	}
	return j.FinishedAt != nil && models.IsTerminal(j.State) && s.now().Sub(*j.FinishedAt) > s.cfg.LogRetention, nil
}
