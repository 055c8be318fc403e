package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"time"
)

// How gantry job submit sends a job again when it got no answer: a few times, soon
// then less often. The request carries an Idempotency-Key, so a job that the server
// queued before its answer was lost is not queued twice.
const (
	submitTries   = 5
	submitBackoff = 500 * time.Millisecond
)

// submitJob posts body to /api/v1/jobs under a new idempotency key, sending it again
// with the same key while the server cannot be reached or fails, saying so on errOut.
func submitJob(ctx context.Context, c *apiClient, body []byte, errOut io.Writer) ([]byte, error) {
	header := http.Header{"Idempotency-Key": {"gantry-cli-" + rand.Text()}}
	wait := submitBackoff
	for try := 1; ; try++ {
		raw, err := c.callWith(ctx, http.MethodPost, "/api/v1/jobs", nil, body, header)
		if err == nil || !retryable(err) || try == submitTries || ctx.Err() != nil {
			return raw, err
		}
		fmt.Fprintf(errOut, "%v; sending the job again in %s (it is queued once, however many times it is sent)…\n", err, wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}
