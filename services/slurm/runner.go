package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runner runs one Slurm command and returns its standard output. A command that
// exits non-zero gives a *CommandError; one that cannot run or times out gives an
// error wrapping ErrUnavailable.
type Runner interface {
	Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error)
}

// CommandError is a command that ran and failed.
type CommandError struct {
	Name     string
	ExitCode int
	Stdout   string
	Stderr   string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s exited with %d: %s", e.Name, e.ExitCode, lastError(e.Stderr))
}

// ExecRunner runs the commands installed on this host.
type ExecRunner struct {
	binDir  string
	env     []string
	timeout time.Duration
}

// NewExecRunner runs commands from binDir (empty: from PATH) with SLURM_CONF set to
// slurmConf when given, each for at most timeout.
func NewExecRunner(binDir, slurmConf string, timeout time.Duration) *ExecRunner {
	// Fixed formats whatever the server's environment says: UTC ISO times, C locale.
	env := []string{"TZ=UTC", "LC_ALL=C", "SLURM_TIME_FORMAT=standard"}
	if slurmConf != "" {
		env = append(env, "SLURM_CONF="+slurmConf)
	}
	return &ExecRunner{binDir: binDir, env: env, timeout: timeout}
}

// Run implements Runner.
func (r *ExecRunner) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	path := name
	if r.binDir != "" {
		path = filepath.Join(r.binDir, name)
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.Env = append(withoutSlurmEnv(os.Environ()), r.env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case cctx.Err() != nil:
		return nil, fmt.Errorf("%w: %s did not answer within %s", ErrUnavailable, name, r.timeout)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s is not installed (%v)", ErrUnavailable, name, err)
	case errors.As(err, &exitErr):
		return nil, &CommandError{Name: name, ExitCode: exitErr.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	default:
		return nil, fmt.Errorf("%w: run %s: %v", ErrUnavailable, name, err)
	}
}

// withoutSlurmEnv drops variables that change what the commands print or which
// cluster they talk to (SQUEUE_FORMAT, SLURM_CLUSTERS, ...), keeping SLURM_CONF
// unless the runner sets its own.
func withoutSlurmEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "SLURM_CONF" {
			out = append(out, kv)
			continue
		}
		if strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "SQUEUE_") || strings.HasPrefix(k, "SACCT_") ||
			strings.HasPrefix(k, "SINFO_") || strings.HasPrefix(k, "SBATCH_") || k == "TZ" || k == "LC_ALL" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
