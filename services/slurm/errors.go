package slurm

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable wraps failures that may pass by themselves: the controller or the
// accounting database cannot be reached, a command timed out or is not installed.
var ErrUnavailable = errors.New("slurm unavailable")

// RejectedError is Slurm refusing a request for good, e.g. an unknown partition or a
// job over a limit. Retrying the same request cannot succeed.
type RejectedError struct {
	Command string // sbatch, scontrol hold, ...
	Reason  string // Slurm's words
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s rejected by Slurm: %s", e.Command, e.Reason)
}

// OtherJobError is a Slurm job id that Slurm gives to another job than the one
// Gantry submitted under it (Slurm's job ids restarted, or someone renamed the
// job): Gantry did not act on it. Retrying cannot succeed.
type OtherJobError struct {
	Action string // what was not done to the job: cancelled, held, released, ...
	ID     string // the Slurm job id
	Want   string // the name Gantry submitted its job under
	Name   string // the name of the job Slurm has under ID now
	User   string // that job's user
}

func (e *OtherJobError) Error() string {
	return fmt.Sprintf("Slurm job %s not %s: that id is no longer %s, which Gantry submitted, but another job, %q of user %s (Slurm's job ids restarted, or someone renamed the job); Gantry leaves that job alone",
		e.ID, e.Action, e.Want, printable(e.Name), orNobody(e.User))
}

// ParseError is command output this package cannot read, most likely from a Slurm
// version that formats it differently. It names what was unparsable.
type ParseError struct {
	Command string // e.g. squeue
	Line    int    // 1-based; 0 when the output as a whole is wrong
	Field   string // e.g. start_time
	JobID   string // the job the line is about, when its id was readable
	Text    string // the offending text, shortened
	Err     error
}

func (e *ParseError) Error() string {
	where := e.Command + " output"
	if e.Line > 0 {
		where += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Field != "" {
		where += " field " + e.Field
	}
	return fmt.Sprintf("cannot parse %s %q: %v", where, shorten(e.Text), e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Transient reports whether err may go away by itself, so the request should be
// retried later rather than failed: Slurm unreachable, or output not understood.
func Transient(err error) bool {
	var pe *ParseError
	return errors.Is(err, ErrUnavailable) || errors.As(err, &pe)
}

// unreachable holds Slurm's words for "cannot talk to the controller or database".
var unreachable = []string{
	"unable to contact slurm controller",
	"socket timed out",
	"connection refused",
	"connection timed out",
	"zero bytes were transmitted",
	"problem talking to the database",
	"persistent connection",
	"communication connection failure",
	"controller is in standby",
	"not responding",
	"resource temporarily unavailable",
	"munge",
	"authentication error",
	"transport endpoint",
}

// classify turns a failed command's stderr into ErrUnavailable or *RejectedError.
func classify(command, stderr string) error {
	msg := lastError(stderr)
	low := strings.ToLower(stderr)
	for _, u := range unreachable {
		if strings.Contains(low, u) {
			return fmt.Errorf("%w: %s: %s", ErrUnavailable, command, msg)
		}
	}
	return &RejectedError{Command: command, Reason: msg}
}

// lastError is the most telling line of Slurm's stderr: the last non-empty one, with
// the "sbatch: error: Batch job submission failed:" style prefixes removed.
func lastError(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msg := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "*") {
			msg = l
			break
		}
	}
	for _, p := range []string{"error:", "Batch job submission failed:", "slurm_suspend error:", "Kill job error on job id"} {
		if i := strings.LastIndex(msg, p); i >= 0 {
			msg = strings.TrimSpace(msg[i+len(p):])
		}
	}
	if msg == "" {
		return "failed without a message"
	}
	return shorten(msg)
}

func shorten(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
