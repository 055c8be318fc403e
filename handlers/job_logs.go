package handlers

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// maxLogAnswer bounds one answer; the cursor continues from where it stopped.
const maxLogAnswer = 8 << 20

// JobLogs answers the output of one attempt of a job as text: both streams in the
// order they arrived, or one with ?stream=stdout|stderr. ?attempt=N picks an
// attempt (the latest by default); ?after=CURSOR continues from the
// X-Gantry-Log-Cursor of an earlier answer (one answer holds at most 8 MiB).
func (h *Handler) JobLogs(c *gin.Context) {
	if currentUser(c) == nil {
		return
	}
	j := h.jobParam(c)
	if j == nil {
		return
	}
	attempt := j.Attempt
	if a := c.Query("attempt"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 || n > j.Attempt {
			jsonError(c, http.StatusBadRequest, "invalid", "attempt must be between 1 and "+strconv.Itoa(max(j.Attempt, 1)), "attempt")
			return
		}
		attempt = n
	}
	stream := c.Query("stream")
	if stream != "" && stream != agentapi.StreamStdout && stream != agentapi.StreamStderr {
		jsonError(c, http.StatusBadRequest, "invalid", "stream must be stdout or stderr (or absent for both)", "stream")
		return
	}
	var after int64
	if a := c.Query("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			jsonError(c, http.StatusBadRequest, "invalid", "after must be a cursor from X-Gantry-Log-Cursor", "after")
			return
		}
		after = n
	}
	var out []byte
	for len(out) < maxLogAnswer {
		chunks, err := h.jobs.LogChunks(c.Request.Context(), j.ID, attempt, stream, after)
		if err != nil {
			h.serverError(c, err)
			return
		}
		if len(chunks) == 0 {
			break
		}
		for _, ch := range chunks {
			out = append(out, ch.Data...)
		}
		after = chunks[len(chunks)-1].ID
	}
	c.Header("X-Gantry-Attempt", strconv.Itoa(attempt))
	c.Header("X-Gantry-Log-Cursor", strconv.FormatInt(after, 10))
	c.Data(http.StatusOK, "text/plain; charset=utf-8", out)
}
