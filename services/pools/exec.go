package pools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Exec is the provider that runs an operator's script for every call, the way
// Slurm's power saving runs ResumeProgram and SuspendProgram: the request is JSON
// on stdin ({"action": "create"|"delete"|"list", "pool": …, "server": …,
// "nodes": […]}), the answer JSON on stdout ({"nodes": [{"name", "provider_id",
// "state", "interruption"}]}). A call that hangs is killed (its process group)
// after the timeout; a failed call, or one that prints malformed JSON, is tried
// again with doubling waits. Join tokens travel only on stdin, never in arguments
// or the environment, where other users of the machine could read them.
type Exec struct {
	cfg ExecConfig
}

// NewExec returns the provider for cfg.
func NewExec(cfg ExecConfig) *Exec { return &Exec{cfg: cfg} }

// execRequest is what a script reads on stdin.
type execRequest struct {
	Action string     `json:"action"`
	Pool   PoolInfo   `json:"pool"`
	Server string     `json:"server,omitempty"`
	Nodes  []NewNode  `json:"nodes,omitempty"`
	Delete []Instance `json:"delete,omitempty"`
}

// execAnswer is what a script prints on stdout.
type execAnswer struct {
	Nodes []Instance `json:"nodes"`
}

// ProviderError says which call of which pool failed, after how many tries, and why.
type ProviderError struct {
	Pool     string
	Action   string
	Attempts int
	Err      error
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("pool %s: provider %s failed after %d attempts: %v", e.Pool, e.Action, e.Attempts, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Create asks the script for the request's machines and returns those it reports.
func (x *Exec) Create(ctx context.Context, req CreateRequest) ([]Instance, error) {
	return x.call(ctx, execRequest{Action: "create", Pool: req.Pool, Server: req.Server, Nodes: req.Nodes})
}

// Delete asks the script to delete machines.
func (x *Exec) Delete(ctx context.Context, pool PoolInfo, nodes []Instance) error {
	_, err := x.call(ctx, execRequest{Action: "delete", Pool: pool, Delete: nodes})
	return err
}

// List asks the script for every machine of the pool that exists.
func (x *Exec) List(ctx context.Context, pool PoolInfo) ([]Instance, error) {
	return x.call(ctx, execRequest{Action: "list", Pool: pool})
}

// call runs the script until it answers, up to 1 + Retries times.
func (x *Exec) call(ctx context.Context, req execRequest) ([]Instance, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode provider request: %w", err)
	}
	wait := x.cfg.backoff()
	attempts := 1 + x.cfg.retries()
	var last error
	for i := 1; i <= attempts; i++ {
		out, err := x.once(ctx, req, in)
		if err == nil {
			return out, nil
		}
		last = err
		if ctx.Err() != nil || i == attempts {
			return nil, &ProviderError{Pool: req.Pool.Name, Action: req.Action, Attempts: i, Err: last}
		}
		select {
		case <-ctx.Done():
			return nil, &ProviderError{Pool: req.Pool.Name, Action: req.Action, Attempts: i, Err: last}
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Minute)
	}
	return nil, &ProviderError{Pool: req.Pool.Name, Action: req.Action, Attempts: attempts, Err: last}
}

// maxAnswer bounds what a script may print.
const maxAnswer = 4 << 20

// once runs the script one time.
func (x *Exec) once(ctx context.Context, req execRequest, in []byte) ([]Instance, error) {
	timeout := x.cfg.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, x.cfg.Command[0], x.cfg.Command[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the script's whole process group: a hung script's children hang too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that keeps stdout open must not hold the call past the script's end.
	cmd.WaitDelay = 2 * time.Second
	cmd.Env = append(os.Environ(), "GANTRY_ACTION="+req.Action, "GANTRY_POOL="+req.Pool.Name)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxAnswer, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return nil, fmt.Errorf("%s timed out after %s and was killed; make it finish sooner or raise provider_config.timeout_sec%s",
			x.cfg.Command[0], timeout, stderrTail(stderr.String()))
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return nil, fmt.Errorf("%s %s: %v%s", x.cfg.Command[0], req.Action, err, stderrTail(stderr.String()))
	case stdout.truncated:
		return nil, fmt.Errorf("%s %s printed more than %d bytes; print only the answer's JSON", x.cfg.Command[0], req.Action, maxAnswer)
	}
	var ans execAnswer
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	if err := dec.Decode(&ans); err != nil {
		return nil, fmt.Errorf("%s %s printed malformed JSON (%v); want {\"nodes\": [{\"name\": …}]}, got %q", x.cfg.Command[0], req.Action, err, clip(redact(stdout.String()), 200))
	}
	for i, n := range ans.Nodes {
		if n.Name == "" {
			return nil, fmt.Errorf("%s %s: nodes[%d] has no name", x.cfg.Command[0], req.Action, i)
		}
	}
	return ans.Nodes, nil
}

// secretShape is a Gantry secret as it is handed out: a join token, a node credential,
// a job token or an API token. A script that echoes its stdin (set -x, a debugging
// cat) prints the join tokens of its request; what it prints goes into errors, the
// server log, the pool's events and the audit log, so never a secret.
var secretShape = regexp.MustCompile(`\bg(jt|nc|jb|ty)_[A-Za-z0-9_-]+`)

func redact(s string) string { return secretShape.ReplaceAllString(s, "g${1}_[redacted]") }

func stderrTail(s string) string {
	s = redact(strings.TrimSpace(s))
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return "; stderr: " + s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// limitedBuffer keeps the first max bytes written and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.truncated = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
