package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// logKeepAlive is how often a quiet log stream sends a comment, so that proxies keep
// the connection open.
const logKeepAlive = 15 * time.Second

// logWaitRetry is how soon a browser asks again for the logs of a job not started yet.
const logWaitRetry = 2 * time.Second

// A page's log shows the last 2 MiB of what an attempt wrote before it opened, in 2,000
// chunks at most: a chatty job writes hundreds of MiB, more than a browser can lay out.
// Download has it all.
const (
	logPageBytes  = 2 << 20
	logPageChunks = 2000
)

// skippedEvent is the data of the "skipped" event: the bytes of earlier output left out.
type skippedEvent struct {
	Bytes int64 `json:"bytes"`
}

// logEvent is the data of a "log" event: one chunk of one stream.
type logEvent struct {
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// followEvent is the data of the "following" event: the attempt is followed live.
type followEvent struct {
	Attempt int `json:"attempt"`
}

// endEvent is the data of the "end" event: the attempt followed ended.
type endEvent struct {
	Attempt int    `json:"attempt"`
	Latest  int    `json:"latest"` // the job's attempt now: a retry may follow
	State   string `json:"state"`
}

// JobLogStream streams one attempt's output as server-sent events, read from the log
// store so that any replica can serve it: "skipped" first when the attempt wrote more
// than a page shows (the bytes of earlier output left out); "following" when the
// attempt has not ended; "log" events carry a chunk, with the chunk's id as the event id (a reconnecting
// browser sends it back as Last-Event-ID and goes on after it); "waiting", after which
// the connection closes and the browser asks again shortly, while the job has not
// started; "end" once the attempt ended and all it wrote was sent. ?attempt and ?stream pick as GET /api/v1/jobs/:id/logs does.
func (h *Handler) JobLogStream(c *gin.Context) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	q, ok := logQueryOf(c, j)
	if !ok {
		return
	}
	resumed := false
	if last := c.GetHeader("Last-Event-ID"); last != "" {
		if n, err := strconv.ParseInt(last, 10, 64); err == nil && n > q.after {
			q.after, resumed = n, true
		}
	}
	ctx := c.Request.Context()
	w := c.Writer
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event, id string, data any) bool {
		b, _ := json.Marshal(data)
		if id != "" {
			fmt.Fprintf(w, "id: %s\n", id)
		}
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		w.Flush()
		return err == nil
	}
	if q.attempt == 0 {
		// Nothing ran yet: say so and let the browser ask again (EventSource reconnects
		// after retry), rather than hold a connection for as long as the job queues.
		if models.IsTerminal(j.State) {
			send("end", "", endEvent{State: j.State})
			return
		}
		fmt.Fprintf(w, "retry: %d\n", logWaitRetry.Milliseconds())
		send("waiting", "", map[string]string{"state": j.State})
		return
	}
	if !resumed {
		from, skipped, err := h.jobs.LogTailFrom(ctx, j.ID, q.attempt, q.stream, q.after, logPageBytes, logPageChunks)
		if err != nil {
			return
		}
		if skipped > 0 && !send("skipped", "", skippedEvent{Bytes: skipped}) {
			return
		}
		q.after = from
	}
	// Whether it ended is read before the output: an agent ships all output before it
	// reports the exit, so nothing can follow the last read.
	ended, err := h.attemptEnded(ctx, j.ID, q.attempt)
	if err != nil {
		return
	}
	if !ended {
		// A page that waited for the start learns it follows now, output or not.
		send("following", "", followEvent{Attempt: q.attempt})
	}
	quiet := time.Now()
	for {
		for {
			chunks, err := h.jobs.LogChunks(ctx, j.ID, q.attempt, q.stream, q.after, 0)
			if err != nil || len(chunks) == 0 {
				break
			}
			for _, ch := range chunks {
				if !send("log", strconv.FormatInt(ch.ID, 10), logEvent{Stream: ch.Stream, Text: string(ch.Data)}) {
					return
				}
			}
			q.after, quiet = chunks[len(chunks)-1].ID, time.Now()
		}
		if ended {
			if now, err := h.jobs.Job(ctx, j.ID); err == nil {
				send("end", "", endEvent{Attempt: q.attempt, Latest: now.Attempt, State: now.State})
			}
			return
		}
		if time.Since(quiet) > logKeepAlive {
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			w.Flush()
			quiet = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(logFollowPoll):
		}
		if ended, err = h.attemptEnded(ctx, j.ID, q.attempt); err != nil {
			return
		}
	}
}
