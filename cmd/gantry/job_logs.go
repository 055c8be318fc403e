package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/models"
)

// How gantry job logs -f asks again: soon after new output, less often while there is
// none; soon after a server did not answer, then less often, and for how long it rides
// out a server that does not answer (a restart, a replica going away) before it gives up.
const (
	followSoon    = 250 * time.Millisecond
	followIdle    = 2 * time.Second
	followOutage  = 10 * time.Minute
	followBackoff = 5 * time.Second
)

func newJobLogsCmd() *cobra.Command {
	var o clientOpts
	var follow bool
	var attempt int
	var stream string
	cmd := &cobra.Command{
		Use:   "logs [-f] ID",
		Short: "Print a job's output; -f follows it until the job ends (its next attempts too), across server restarts",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			l := &logReader{c: c, id: id, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), q: url.Values{}, pinned: attempt > 0}
			if attempt > 0 {
				l.q.Set("attempt", strconv.Itoa(attempt))
			}
			if stream != "" {
				l.q.Set("stream", stream)
			}
			if follow {
				err = l.follow(cmd.Context())
			} else {
				_, _, err = l.read(cmd.Context())
			}
			if err != nil {
				return fmt.Errorf("logs of job %d: %w", id, err)
			}
			if l.deleted != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "The output of job %d was deleted at %s: the server keeps a job's output for a while after it ends.\n", id, l.deleted)
			}
			return nil
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing output as it comes, until the job ends (or the attempt --attempt names)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "attempt to show (default: the latest)")
	cmd.Flags().StringVar(&stream, "stream", "", "stdout or stderr (default: both, as they came)")
	return cmd
}

// logReader reads a job's output through GET /api/v1/jobs/ID/logs, each answer going
// on after the cursor of the one before, so that nothing is printed twice or missed.
type logReader struct {
	c           *apiClient
	id          int64
	out, errOut io.Writer
	q           url.Values // attempt, once known, stream, and after
	// pinned: the attempt was asked for; following ends with it, not with the job.
	pinned bool
	// got is how much of an answer cut short was printed: the same answer, asked
	// again, starts with those bytes.
	got     int64
	deleted string
}

// read prints the output stored after the cursor, and says whether it was all the
// attempt will write and whether there was any.
func (l *logReader) read(ctx context.Context) (ended, some bool, err error) {
	res, err := l.c.send(ctx, http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d/logs", l.id), l.q, nil)
	if err != nil {
		return false, false, err
	}
	defer res.Body.Close()
	if _, err := io.CopyN(io.Discard, res.Body, l.got); errors.Is(err, io.EOF) {
		return false, false, errOutputShrank
	} else if err != nil {
		return false, false, fmt.Errorf("read the answer of %s: %w", l.c.base, err)
	}
	n, err := io.Copy(l.out, res.Body)
	l.got += n
	if err != nil {
		return false, false, fmt.Errorf("read the answer of %s: %w", l.c.base, err)
	}
	if a := res.Header.Get("X-Gantry-Attempt"); a != "" && a != "0" {
		l.q.Set("attempt", a)
	}
	if cursor := res.Header.Get("X-Gantry-Log-Cursor"); cursor != "" {
		l.q.Set("after", cursor)
	}
	l.deleted = res.Header.Get("X-Gantry-Output-Deleted")
	some, l.got = l.got > 0, 0
	return res.Header.Get("X-Gantry-Attempt-Ended") == "true", some, nil
}

// errOutputShrank says the output read before is no longer all there (deleted for its
// age meanwhile): reading on would print something else.
var errOutputShrank = errors.New("the output shrank while it was read: it was deleted meanwhile, or its attempt changed")

// follow prints the output as it comes until the job ends (or the attempt asked for
// does), asking again after the cursor of each answer; a server that does not answer is
// asked again for a while, so that a restart or a replica going away loses and repeats
// nothing.
func (l *logReader) follow(ctx context.Context) error {
	wait := followSoon
	var down time.Time // since when the server has not answered; zero while it answers
	for {
		ended, some, err := l.read(ctx)
		switch {
		case err == nil:
			if !down.IsZero() {
				fmt.Fprintln(l.errOut, "The server answers again; the output goes on where it stopped.")
				down = time.Time{}
			}
			if ended {
				done, err := l.next(ctx)
				if done || err != nil && !retryable(err) {
					return err
				}
			}
			if some {
				wait = followSoon
			} else {
				wait = min(2*wait, followIdle)
			}
		case ctx.Err() != nil || errors.Is(err, errOutputShrank) || !retryable(err):
			return err
		default:
			if down.IsZero() {
				down, wait = time.Now(), followSoon/2
				fmt.Fprintf(l.errOut, "%v; asking again until it answers…\n", err)
			}
			if time.Since(down) > followOutage {
				return fmt.Errorf("no answer for %s: %w", followOutage, err)
			}
			wait = min(2*wait, followBackoff)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// next is what follows an attempt that ended: nothing when the attempt was asked for or
// the job ended with it (done), else the job's next attempt once it has one, which the
// reader then reads from its start.
func (l *logReader) next(ctx context.Context) (done bool, err error) {
	if l.pinned {
		return true, nil
	}
	var j struct {
		State   string `json:"state"`
		Attempt int    `json:"attempt"`
	}
	if _, err := l.c.getJSON(ctx, fmt.Sprintf("/api/v1/jobs/%d", l.id), nil, &j); err != nil {
		return false, err
	}
	current, _ := strconv.Atoi(l.q.Get("attempt"))
	switch {
	case j.Attempt > current:
		fmt.Fprintf(l.errOut, "Attempt %d of job %d started (%s).\n", j.Attempt, l.id, j.State)
		l.q.Set("attempt", strconv.Itoa(j.Attempt))
		l.q.Del("after")
		return false, nil
	case models.IsTerminal(j.State):
		return true, nil
	}
	return false, nil // it waits to run again
}
