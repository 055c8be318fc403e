package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/store"
)

// AppendLog stores a chunk of an attempt's output and answers the offset the next
// chunk must start at. Chunks are idempotent: a resent chunk, or one that overlaps
// what is stored, keeps only its new bytes; one that starts past the stored end is
// refused with a *LogOffsetError saying where to resume. Logs of an attempt that
// ended are still taken, so that its output is complete. The job's secret values are
// masked (appendLog). Once a stream holds Config.LogLimit bytes, or once the job's
// output is past Config.LogRetention, what follows is taken and not kept, and the
// answer says the stream is full, so that the agent sends no more of it.
func (s *Service) AppendLog(ctx context.Context, node *models.Node, c agentapi.LogChunk) (agentapi.LogAck, error) {
	if err := c.Validate(); err != nil {
		return agentapi.LogAck{}, err
	}
	a, err := s.store.AllocationByAttempt(ctx, c.JobID, c.Attempt, c.Replica)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.NodeID != node.ID {
		return agentapi.LogAck{}, staleErr(c.AttemptRef, "it has no allocation on this node")
	}
	if err != nil {
		return agentapi.LogAck{}, err
	}
	switch aged, err := s.agedOut(ctx, a); {
	case err != nil:
		return agentapi.LogAck{}, fmt.Errorf("append log of %s: %w", c.AttemptRef, err)
	case aged:
		return agentapi.LogAck{NextOffset: c.Offset + int64(len(c.Data)), Full: true}, nil
	}
	secrets, err := s.store.JobSecretEnv(ctx, c.JobID)
	if err != nil {
		return agentapi.LogAck{}, err
	}
	m := newMasker(secrets)
	for {
		end, err := s.store.LogEnd(ctx, c.JobID, c.Attempt, c.Replica, c.Stream)
		if err != nil {
			return agentapi.LogAck{}, err
		}
		next := c.Offset + int64(len(c.Data))
		switch {
		case next <= end:
			return agentapi.LogAck{NextOffset: end, Full: end >= s.cfg.LogLimit}, nil
		case end >= s.cfg.LogLimit:
			return agentapi.LogAck{NextOffset: next, Full: true}, nil
		case c.Offset > end:
			return agentapi.LogAck{}, &LogOffsetError{Next: end}
		}
		err = appendLog(ctx, s.store, models.JobLogChunk{
			JobID: c.JobID, Attempt: c.Attempt, Replica: c.Replica, Stream: c.Stream,
			Offset: end, Data: c.Data[end-c.Offset:],
		}, m, s.cfg.LogLimit)
		if errors.Is(err, store.ErrConflict) {
			continue // another request stored a chunk at end first; look again
		}
		if err != nil {
			return agentapi.LogAck{}, fmt.Errorf("append log of %s: %w", c.AttemptRef, err)
		}
		return agentapi.LogAck{NextOffset: next, Full: next >= s.cfg.LogLimit}, nil
	}
}

// ReasonLogLimit is the reason of the timeline event that says a stream reached the
// log limit.
const ReasonLogLimit = "log limit"

// appendLog stores c as the bytes of its stream from c.Offset (under limit) on, the
// job's secret values masked, and none from limit on: a chunk that reaches limit is
// cut there, and the job's timeline says, in the same transaction, that the stream's
// later output is not kept. A chunk already stored at c.Offset is ErrConflict, and
// changes nothing.
func appendLog(ctx context.Context, st *store.Store, c models.JobLogChunk, m masker, limit int64) error {
	full := c.Offset+int64(len(c.Data)) >= limit
	if full {
		c.Data = c.Data[:limit-c.Offset]
	}
	if len(m.values) == 0 && !full {
		return st.CreateLogChunk(ctx, &c)
	}
	return st.InTx(ctx, func(tx *store.Store) error {
		if err := storeMasked(ctx, tx, c, m); err != nil || !full {
			return err
		}
		what := c.Stream
		if c.Replica > 0 {
			what = fmt.Sprintf("replica %d's %s", c.Replica, c.Stream)
		}
		return tx.NoteAttempt(ctx, c.JobID, c.Attempt, ReasonLogLimit,
			fmt.Sprintf("%s reached %s, the most kept of one stream: what it writes after is not kept", what, mib(limit)))
	})
}

// mib says a size in MiB, as the log limit is set, or else in bytes.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// storeMasked stores c in tx with the job's secret values masked. A value split
// between chunks is masked too: the end of a chunk that begins a value is stored
// masked and kept in clear as the stream's tail, and the next chunk, read after it,
// says whether the value follows (those bytes stay masked) or not (they are written
// back). A stream that ends in the beginning of a value keeps it masked.
func storeMasked(ctx context.Context, tx *store.Store, c models.JobLogChunk, m masker) error {
	if len(m.values) == 0 {
		return tx.CreateLogChunk(ctx, &c)
	}
	tail, err := tx.LogTail(ctx, c.JobID, c.Attempt, c.Replica, c.Stream)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var held []byte
	if tail != nil && tail.Offset+int64(len(tail.Data)) == c.Offset {
		held = tail.Data
	}
	base := c.Offset - int64(len(held))
	out, open := m.mask(slices.Concat(held, c.Data))
	keep := len(out) - open
	stored := slices.Clone(out)
	copy(stored[keep:], bytes.Repeat([]byte("*"), open))
	if n := min(len(held), keep); n > 0 && !bytes.Equal(stored[:n], bytes.Repeat([]byte("*"), n)) {
		if err := tx.RewriteLog(ctx, c.JobID, c.Attempt, c.Replica, c.Stream, base, stored[:n]); err != nil {
			return err
		}
	}
	c.Data = stored[len(held):]
	if err := tx.CreateLogChunk(ctx, &c); err != nil {
		return err
	}
	if tail == nil && open == 0 {
		return nil
	}
	return tx.SetLogTail(ctx, &models.JobLogTail{JobID: c.JobID, Attempt: c.Attempt, Replica: c.Replica, Stream: c.Stream,
		Offset: base + int64(keep), Data: out[keep:]})
}

// masker masks a job's secret values in its output with as many '*', so that offsets
// still hold.
type masker struct {
	values [][]byte // longest first: a value that holds another is masked whole
	fail   [][]int  // each value's failure function (Knuth-Morris-Pratt)
}

func newMasker(secrets map[string]string) masker {
	var m masker
	for _, v := range secrets {
		if v != "" {
			m.values = append(m.values, []byte(v))
		}
	}
	slices.SortFunc(m.values, func(a, b []byte) int { return len(b) - len(a) })
	for _, v := range m.values {
		m.fail = append(m.fail, failure(v))
	}
	return m
}

// mask masks every value that data holds whole, and says how many bytes at its end
// begin a value (the longest such end), which a later chunk may complete.
func (m masker) mask(data []byte) (out []byte, open int) {
	out = data
	for _, v := range m.values {
		if bytes.Contains(out, v) {
			out = bytes.ReplaceAll(out, v, bytes.Repeat([]byte("*"), len(v)))
		}
	}
	for i, v := range m.values {
		open = max(open, opening(out, v, m.fail[i]))
	}
	return out, open
}

// opening is the length of the longest proper prefix of v that text ends with, in
// time linear in len(v).
func opening(text, v []byte, fail []int) int {
	text = text[max(0, len(text)-(len(v)-1)):]
	k := 0
	for _, b := range text {
		for k > 0 && v[k] != b {
			k = fail[k-1]
		}
		if v[k] == b {
			k++
		}
	}
	return k
}

// failure gives, for each prefix v[:i+1], the length of its longest proper prefix that
// is also its suffix.
func failure(v []byte) []int {
	f := make([]int, len(v))
	for i, k := 1, 0; i < len(v); i++ {
		for k > 0 && v[i] != v[k] {
			k = f[k-1]
		}
		if v[i] == v[k] {
			k++
		}
		f[i] = k
	}
	return f
}
