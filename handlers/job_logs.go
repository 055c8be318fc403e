package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// logFollowPoll is how often a followed log looks for new output. It reads the
// database, so any server replica can answer.
const logFollowPoll = 250 * time.Millisecond

// JobLogs answers the output of one attempt of a job as text: both streams in the
// order they arrived, or one with ?stream=stdout|stderr. ?attempt=N picks an
// attempt (the latest by default); ?after=CURSOR continues from the
// X-Gantry-Log-Cursor of an earlier answer. The answer holds all the output stored
// when it began, read a page at a time (an attempt's output can be gigabytes), with
// its length said first, so that one cut short shows as such, and whether the attempt
// had ended (X-Gantry-Attempt-Ended: then the answers up to its cursor hold all of its
// output), so that a client can follow by asking again after the cursor, across server
// restarts. ?follow=1 (or true) keeps the answer open, streaming output until the
// attempt ends.
func (h *Handler) JobLogs(c *gin.Context) {
	if currentUser(c) == nil {
		return
	}
	j := h.jobParam(c)
	if j == nil {
		return
	}
	q, ok := logQueryOf(c, j)
	if !ok || !h.sayOutputDeleted(c, j) {
		return
	}
	if q.follow {
		if q.attempt == 0 {
			q.attempt = h.firstAttempt(c.Request.Context(), j.ID)
		}
		c.Header("X-Gantry-Attempt", strconv.Itoa(q.attempt))
		h.followLogs(c, j.ID, q)
		return
	}
	c.Header("X-Gantry-Attempt", strconv.Itoa(q.attempt))
	ctx := c.Request.Context()
	// Read before the output, as when following: an agent ships all of an attempt's
	// output before it reports the exit.
	ended := models.IsTerminal(j.State)
	if q.attempt > 0 {
		var err error
		if ended, err = h.attemptEnded(ctx, j.ID, q.attempt); err != nil {
			h.serverError(c, err)
			return
		}
	}
	last, size, err := h.jobs.LogExtent(ctx, j.ID, q.attempt, q.stream, q.after)
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Header("X-Gantry-Attempt-Ended", strconv.FormatBool(ended))
	c.Header("X-Gantry-Log-Cursor", strconv.FormatInt(max(last, q.after), 10))
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("Content-Length", strconv.FormatInt(size, 10))
	c.Status(http.StatusOK)
	for q.after < last {
		chunks, err := h.jobs.LogChunks(ctx, j.ID, q.attempt, q.stream, q.after, last)
		if err != nil || len(chunks) == 0 {
			// Deleted meanwhile, or the database failed: the answer falls short of
			// its length, which the client sees.
			h.log.Warn("job logs cut short", "job", j.ID, "attempt", q.attempt, "err", err)
			return
		}
		for _, ch := range chunks {
			if _, err := c.Writer.Write(ch.Data); err != nil {
				return
			}
		}
		q.after = chunks[len(chunks)-1].ID
	}
}

// sayOutputDeleted sets X-Gantry-Output-Deleted to when the output of an ended job was
// deleted for its age, if it was: an answer without output then says why. It answers
// 500 and returns false when the job's timeline cannot be read.
func (h *Handler) sayOutputDeleted(c *gin.Context, j *models.Job) bool {
	if !models.IsTerminal(j.State) {
		return true
	}
	events, err := h.jobs.Events(c.Request.Context(), j.ID)
	if err != nil {
		h.serverError(c, err)
		return false
	}
	for _, e := range events {
		if e.Reason == dispatch.ReasonLogRetention {
			c.Header("X-Gantry-Output-Deleted", e.CreatedAt.UTC().Format(time.RFC3339))
		}
	}
	return true
}

type logQuery struct {
	attempt int
	stream  string
	after   int64
	follow  bool
}

// logQueryOf reads the query of a log request, or answers 400.
func logQueryOf(c *gin.Context, j *models.Job) (logQuery, bool) {
	q := logQuery{attempt: j.Attempt, stream: c.Query("stream")}
	if a := c.Query("attempt"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 || n > j.Attempt {
			jsonError(c, http.StatusBadRequest, "invalid", "attempt must be between 1 and "+strconv.Itoa(max(j.Attempt, 1)), "attempt")
			return q, false
		}
		q.attempt = n
	}
	if q.stream != "" && q.stream != agentapi.StreamStdout && q.stream != agentapi.StreamStderr {
		jsonError(c, http.StatusBadRequest, "invalid", "stream must be stdout or stderr (or absent for both)", "stream")
		return q, false
	}
	if a := c.Query("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			jsonError(c, http.StatusBadRequest, "invalid", "after must be a cursor from X-Gantry-Log-Cursor", "after")
			return q, false
		}
		q.after = n
	}
	// Checked, not compared with "1": ?follow=yes would otherwise answer what was
	// written so far and end, as if the job had stopped writing.
	if f := c.Query("follow"); f != "" {
		follow, err := strconv.ParseBool(f)
		if err != nil {
			jsonError(c, http.StatusBadRequest, "invalid", "follow must be 1 or true to stream until the attempt ends, 0 or false (or absent) not to", "follow")
			return q, false
		}
		q.follow = follow
	}
	return q, true
}

// followLogs streams the attempt's output as it arrives and returns once the
// attempt has ended and everything it wrote was sent, or the client left.
func (h *Handler) followLogs(c *gin.Context, jobID int64, q logQuery) {
	ctx := c.Request.Context()
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Header("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	for {
		// Read whether it ended before reading the output: an agent ships all
		// output before it reports the exit, so nothing can follow the last read.
		ended, err := h.attemptEnded(ctx, jobID, q.attempt)
		if err != nil {
			h.log.Warn("follow logs", "job", jobID, "err", err)
			return
		}
		for {
			chunks, err := h.jobs.LogChunks(ctx, jobID, q.attempt, q.stream, q.after, 0)
			if err != nil {
				return
			}
			if len(chunks) == 0 {
				break
			}
			for _, ch := range chunks {
				if _, err := c.Writer.Write(ch.Data); err != nil {
					return
				}
			}
			q.after = chunks[len(chunks)-1].ID
		}
		c.Writer.Flush()
		if ended {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(logFollowPoll):
		}
	}
}

// attemptEnded reports whether an attempt will write no more output: the job
// moved on to a later attempt, or none of the attempt's allocations is active.
func (h *Handler) attemptEnded(ctx context.Context, jobID int64, attempt int) (bool, error) {
	j, err := h.jobs.Job(ctx, jobID)
	if err != nil || j.Attempt > attempt {
		return err == nil, err
	}
	allocs, err := h.jobs.Allocations(ctx, jobID)
	if err != nil {
		return false, err
	}
	for _, a := range allocs {
		if a.Attempt == attempt && a.State != models.AllocEnded {
			return false, nil
		}
	}
	return true, nil
}

// firstAttempt waits until a job that never ran has an attempt to follow, and
// returns it; 0 when the job ended without one or the client left.
func (h *Handler) firstAttempt(ctx context.Context, jobID int64) int {
	for {
		j, err := h.jobs.Job(ctx, jobID)
		if err != nil || j.Attempt > 0 || models.IsTerminal(j.State) {
			if err != nil {
				return 0
			}
			return j.Attempt
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(logFollowPoll):
		}
	}
}
