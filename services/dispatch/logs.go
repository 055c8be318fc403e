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

// AppendLog stores a chunk of an attempt's output and returns the offset the next
// chunk must start at. Chunks are idempotent: a resent chunk, or one that overlaps
// what is stored, keeps only its new bytes; one that starts past the stored end is
// refused with a *LogOffsetError saying where to resume. Logs of an attempt that
// ended are still taken, so that its output is complete.
func (s *Service) AppendLog(ctx context.Context, node *models.Node, c agentapi.LogChunk) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	a, err := s.store.AllocationByAttempt(ctx, c.JobID, c.Attempt, c.Replica)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.NodeID != node.ID {
		return 0, staleErr(c.AttemptRef, "it has no allocation on this node")
	}
	if err != nil {
		return 0, err
	}
	secrets, err := s.store.JobSecretEnv(ctx, c.JobID)
	if err != nil {
		return 0, err
	}
	for {
		end, err := s.store.LogEnd(ctx, c.JobID, c.Attempt, c.Replica, c.Stream)
		if err != nil {
			return 0, err
		}
		next := c.Offset + int64(len(c.Data))
		switch {
		case c.Offset > end:
			return 0, &LogOffsetError{Next: end}
		case next <= end:
			return end, nil
		}
		err = s.store.CreateLogChunk(ctx, &models.JobLogChunk{
			JobID: c.JobID, Attempt: c.Attempt, Replica: c.Replica, Stream: c.Stream,
			Offset: end, Data: redact(c.Data[end-c.Offset:], secrets),
		})
		if errors.Is(err, store.ErrConflict) {
			continue // another request stored a chunk at end first; look again
		}
		if err != nil {
			return 0, fmt.Errorf("append log of %s: %w", c.AttemptRef, err)
		}
		return next, nil
	}
}

// redact masks the job's secret values in a piece of its output with as many '*', so
// that offsets still hold. A value split between two chunks is not caught.
func redact(data []byte, secrets map[string]string) []byte {
	if len(secrets) == 0 {
		return data
	}
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		if v != "" {
			values = append(values, v)
		}
	}
	// Longest first: a value that holds another is masked whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	out := data
	for _, v := range values {
		if bytes.Contains(out, []byte(v)) {
			out = bytes.ReplaceAll(out, []byte(v), bytes.Repeat([]byte("*"), len(v)))
		}
	}
	return out
}
