package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Slurm job can run several Gantry attempts: Slurm requeues it (each run after a
// requeue is the next attempt), and a job Gantry held in Slurm's queue and released
// runs the attempt Gantry placed on release. Its batch script reads which attempt a
// run is at start, from a file next to its logs (on the file system Gantry and the
// nodes share) that holds "ATTEMPT RESTARTS": the attempt of the run after RESTARTS
// requeues, each requeue since counting one more. Submit writes it before sbatch, so
// that the file exists before any node looks for it (a node's NFS client may cache
// its absence); Release rewrites it while the job is held, before scontrol release,
// so that no run can start between the two.

// AttemptPath is the file that tells the batch job submitted as that attempt which
// attempt each of its runs is.
func (c Config) AttemptPath(jobID int64, submitted int) string {
	return filepath.Join(c.LogDir, c.SlurmName(jobID, submitted)+".attempt")
}

// writeAttempt records that the run of the batch job submitted as attempt submitted
// after restarts requeues is attempt; it replaces the file whole, by rename.
func (c Config) writeAttempt(jobID int64, submitted, attempt, restarts int) error {
	path := c.AttemptPath(jobID, submitted)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", attempt, restarts), 0o644); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrUnavailable, path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrUnavailable, path, err)
	}
	return nil
}

// attemptScript sets GANTRY_ATTEMPT in the batch script from the attempt file; when
// the file cannot be read it says so on stderr and counts from the attempt submitted.
func (c Config) attemptScript(s JobSpec) string {
	path := shellQuote(c.AttemptPath(s.JobID, s.Attempt))
	return fmt.Sprintf(`gantry_attempt=%d gantry_restarts=0
if { read -r gantry_a gantry_r <%s; } 2>/dev/null && [[ $gantry_a =~ ^[1-9][0-9]{0,8}$ && $gantry_r =~ ^(0|[1-9][0-9]{0,8})$ ]]; then
  gantry_attempt=$gantry_a gantry_restarts=$gantry_r
else
  echo "gantry: cannot read "%s"; GANTRY_ATTEMPT counts from attempt %d" >&2
fi
export GANTRY_ATTEMPT=$((gantry_attempt + ${SLURM_RESTART_COUNT:-0} - gantry_restarts))
unset gantry_a gantry_r gantry_attempt gantry_restarts
`, s.Attempt, path, path, s.Attempt)
}

// parseRestarts reads `squeue -h -O restartcnt` of one job: how often Slurm requeued it.
func parseRestarts(out []byte) (int, error) {
	s := strings.TrimSpace(string(out))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.ContainsAny(s, " \n+") {
		return 0, &ParseError{Command: "squeue", Field: "restart_count", Text: s, Err: errors.New("want the number of times the job was requeued")}
	}
	return n, nil
}
