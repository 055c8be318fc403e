package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// oldLogBatch is how many chunks of a stream one transaction of MaskOldLogs reads and
// rewrites: at most 16 MiB (agentapi.MaxLogChunk each).
const oldLogBatch = 64

// MaskOldLogs masks the secret values in the stored output of the jobs submitted before
// output was masked (migration 0026 lists them), until none is left or ctx ends, trying
// again every `every` while some are. A stream is read a batch of chunks a transaction,
// so that a long log holds no long transaction. A job with an attempt still running is
// masked at once, and again once none runs (what it adds meanwhile may complete a value
// its old output began); then it is taken off the list.
func (s *Service) MaskOldLogs(ctx context.Context, every time.Duration) {
	for {
		left, err := s.MaskOldLogsOnce(ctx)
		switch {
		case err != nil:
			s.log.Warn("masking secret values in the output of jobs submitted before 0020", "left", left, "err", err)
		case left == 0:
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// MaskOldLogsOnce is one round of MaskOldLogs: it masks the output of every job listed,
// but those it masked already while they run, and says how many are left.
func (s *Service) MaskOldLogsOnce(ctx context.Context) (left int, err error) {
	pending, err := s.store.UnmaskedJobLogs(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	done, chunks := 0, 0
	for _, p := range pending {
		if err := ctx.Err(); err != nil {
			return len(pending) - done, err
		}
		n, finished, err := s.maskOldLog(ctx, p)
		chunks += n
		switch {
		case err != nil:
			errs = append(errs, err)
		case finished:
			done++
		}
	}
	if chunks > 0 || done > 0 {
		s.log.Info("masked secret values in the output of jobs submitted before 0020", "jobs", done, "chunks", chunks, "left", len(pending)-done)
	}
	return len(pending) - done, errors.Join(errs...)
}

// maskOldLog masks the output of one listed job and says how many chunks it changed
// and whether the job is done with (no attempt of it runs).
func (s *Service) maskOldLog(ctx context.Context, p models.UnmaskedJobLog) (int, bool, error) {
	allocs, err := s.store.AllocationsOfJob(ctx, p.JobID)
	if err != nil {
		return 0, false, err
	}
	running := slices.ContainsFunc(allocs, func(a models.Allocation) bool { return a.EndedAt == nil })
	if running && p.SweptAt != nil {
		return 0, false, nil
	}
	j, err := s.store.JobByID(ctx, p.JobID)
	if err != nil {
		return 0, false, err
	}
	secrets, err := s.store.JobSecretEnv(ctx, p.JobID)
	if err != nil {
		return 0, false, err
	}
	changed := 0
	if m := newMasker(secrets); len(m.values) > 0 {
		streams, err := s.store.LogStreams(ctx, p.JobID)
		if err != nil {
			return 0, false, err
		}
		for _, ls := range streams {
			n, err := s.maskOldStream(ctx, p.JobID, ls, m, !running)
			changed += n
			if err != nil {
				return changed, false, fmt.Errorf("mask the output of job %d: %w", p.JobID, err)
			}
		}
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if running {
			if err := tx.SetUnmaskedJobLogSwept(ctx, p.JobID, s.now()); err != nil {
				return err
			}
		} else if err := tx.DeleteUnmaskedJobLog(ctx, p.JobID); err != nil {
			return err
		}
		if changed == 0 {
			return nil
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job.output_masked", ObjectType: "job", ObjectID: strconv.FormatInt(p.JobID, 10),
			ProjectID: &j.ProjectID, Detail: map[string]any{"chunks": changed, "reason": "submitted before its output was masked (migration 0020)"}})
	})
	if err != nil {
		return changed, false, fmt.Errorf("mask the output of job %d: %w", p.JobID, err)
	}
	return changed, !running, nil
}

// maskOldStream masks the values m knows in one stream, a batch of chunks a
// transaction, and says how many chunks it changed. Each batch after the first starts
// with the chunks that hold the end of the one before (as many bytes as a value has,
// but one), so a value split between two batches is masked too. When the stream has
// ended and does not keep a tail yet, an end that begins a value is left as appendLog
// leaves it: masked, kept in clear as the stream's tail, for a chunk that comes late.
func (s *Service) maskOldStream(ctx context.Context, jobID int64, ls store.LogStream, m masker, ended bool) (int, error) {
	keep := len(m.values[0]) - 1 // longest first
	changed := 0
	for from, limit := int64(0), oldLogBatch; ; {
		var next int64
		n, more := 0, false
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			n = 0
			chunks, err := tx.LogChunksFrom(ctx, jobID, ls, from, limit)
			if err != nil || len(chunks) == 0 {
				return err
			}
			more = len(chunks) == limit
			var data []byte
			for _, c := range chunks {
				data = append(data, c.Data...)
			}
			out, open := m.mask(data)
			last := chunks[len(chunks)-1]
			end := last.Offset + int64(len(last.Data))
			if !more && ended && open > 0 {
				switch _, err := tx.LogTail(ctx, jobID, ls.Attempt, ls.Replica, ls.Stream); {
				case errors.Is(err, store.ErrNotFound):
					clear := slices.Clone(out[len(out)-open:])
					out = slices.Clone(out)
					copy(out[len(out)-open:], bytes.Repeat([]byte("*"), open))
					err := tx.SetLogTail(ctx, &models.JobLogTail{JobID: jobID, Attempt: ls.Attempt, Replica: ls.Replica, Stream: ls.Stream, Offset: end - int64(open), Data: clear})
					if err != nil {
						return err
					}
				case err != nil:
					return err
				}
			}
			at := 0
			for _, c := range chunks {
				b := out[at : at+len(c.Data)]
				at += len(c.Data)
				if bytes.Equal(b, c.Data) {
					continue
				}
				if err := tx.SetLogChunkData(ctx, c.ID, b); err != nil {
					return err
				}
				n++
			}
			i, held := len(chunks), 0
			for i > 0 && held < keep {
				i--
				held += len(chunks[i].Data)
			}
			switch {
			case i == len(chunks):
				next = end
			case i > 0:
				next = chunks[i].Offset
			default:
				next = from // the batch is shorter than a value: read more at once
			}
			return nil
		})
		if err != nil {
			return changed, err
		}
		changed += n
		if !more {
			return changed, nil
		}
		if next == from {
			limit *= 2
		} else {
			from, limit = next, oldLogBatch
		}
	}
}
