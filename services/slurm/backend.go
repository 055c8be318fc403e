package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Backend submits Gantry jobs to one Slurm partition and reads what Slurm does with
// them. It holds no state of its own, so several server replicas may share a cluster.
type Backend struct {
	cfg Config
	run Runner
}

// New returns the backend for a pool configured by cfg, running commands with run.
func New(cfg Config, run Runner) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("slurm backend: %w", err)
	}
	return &Backend{cfg: cfg, run: run}, nil
}

// Config is the pool configuration the backend runs with.
func (b *Backend) Config() Config { return b.cfg }

// command runs one command, turning a failure into ErrUnavailable or *RejectedError.
func (b *Backend) command(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	out, err := b.run.Run(ctx, name, args, stdin)
	var ce *CommandError
	if errors.As(err, &ce) {
		what := name
		if len(args) > 0 && (name == "scontrol") {
			what += " " + args[0]
		}
		return nil, classify(what, ce.Stderr+"\n"+ce.Stdout)
	}
	return out, err
}

// Ping says whether the controller answers.
func (b *Backend) Ping(ctx context.Context) error {
	out, err := b.run.Run(ctx, "scontrol", []string{"ping"}, nil)
	var ce *CommandError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %s", ErrUnavailable, firstLine(ce.Stdout+"\n"+ce.Stderr))
	}
	if err != nil {
		return err
	}
	if !strings.Contains(string(out), " is UP") {
		return fmt.Errorf("%w: %s", ErrUnavailable, firstLine(string(out)))
	}
	return nil
}

// Inventory is a partition and its nodes, on the cluster named Cluster.
type Inventory struct {
	Cluster   string
	Partition Partition
	Nodes     []Node
}

// Cluster is the name of the cluster the pool's commands reach: the ClusterName of
// its controller, whichever slurm.conf path leads there.
func (b *Backend) Cluster(ctx context.Context) (string, error) {
	out, err := b.command(ctx, "scontrol", []string{"show", "config"}, nil)
	if err != nil {
		return "", fmt.Errorf("read the cluster's name: %w", err)
	}
	name, err := parseClusterName(out)
	if err != nil {
		return "", fmt.Errorf("read the cluster's name: %w", err)
	}
	return name, nil
}

// Inventory reads the cluster's name, the pool's partition and its nodes with
// their GPUs, for a read-only view: Gantry never changes Slurm's nodes.
func (b *Backend) Inventory(ctx context.Context) (Inventory, error) {
	cluster, err := b.Cluster(ctx)
	if err != nil {
		return Inventory{}, err
	}
	out, err := b.command(ctx, "scontrol", []string{"show", "partition", "-o", b.cfg.Partition}, nil)
	if err != nil {
		return Inventory{}, fmt.Errorf("read partition %s: %w", b.cfg.Partition, err)
	}
	parts, err := parsePartitions(out)
	if err != nil {
		return Inventory{}, fmt.Errorf("read partition %s: %w", b.cfg.Partition, err)
	}
	if len(parts) != 1 || parts[0].Name != b.cfg.Partition {
		return Inventory{}, fmt.Errorf("read partition %s: %w", b.cfg.Partition,
			&ParseError{Command: "scontrol show partition", Text: string(out), Err: errors.New("want exactly that partition")})
	}
	out, err = b.command(ctx, "sinfo", []string{"-N", "-h", "-p", b.cfg.Partition, "-O", sinfoFormat}, nil)
	if err != nil {
		return Inventory{}, fmt.Errorf("read nodes of partition %s: %w", b.cfg.Partition, err)
	}
	nodes, err := parseSinfoNodes(out)
	if err != nil {
		return Inventory{}, fmt.Errorf("read nodes of partition %s: %w", b.cfg.Partition, err)
	}
	for i := range nodes {
		nodes[i].Cluster = cluster
	}
	return Inventory{Cluster: cluster, Partition: parts[0], Nodes: nodes}, nil
}

// Jobs lists every job of the partition that slurmctld still holds (finished jobs
// stay for MinJobAge), Gantry's and everyone else's. Lines squeue printed that could
// not be read come back as bad, naming their job where possible.
func (b *Backend) Jobs(ctx context.Context) (jobs []Job, bad []*ParseError, err error) {
	out, err := b.command(ctx, "squeue", []string{"-h", "-a", "-t", "all", "-p", b.cfg.Partition, "-o", squeueFormat}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list jobs of partition %s: %w", b.cfg.Partition, err)
	}
	jobs, bad = parseSqueue(out)
	return jobs, bad, nil
}

// Runs reads the accounting of jobs from sacct: every run of each, oldest first.
func (b *Backend) Runs(ctx context.Context, ids []string) (runs map[string][]Run, bad []*ParseError, err error) {
	if len(ids) == 0 {
		return map[string][]Run{}, nil, nil
	}
	args := []string{"-X", "-D", "-n", "-P", "--noconvert", "--delimiter=" + sep, "-j", strings.Join(ids, ","), "--format=" + sacctFormat}
	out, err := b.command(ctx, "sacct", args, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read accounting of %d jobs: %w", len(ids), err)
	}
	runs, bad = parseSacct(out)
	return runs, bad, nil
}

// Submit submits an attempt and returns its Slurm job id. It is idempotent: when
// Slurm already has a job of this attempt (an earlier call whose answer was lost),
// that job's id comes back and nothing is submitted. Bad specs give a
// *models.FieldError, refusals a *RejectedError; both are final.
func (b *Backend) Submit(ctx context.Context, s JobSpec) (string, error) {
	args, err := b.cfg.sbatchArgs(s)
	if err != nil {
		return "", fmt.Errorf("submit job %d attempt %d: %w", s.JobID, s.Attempt, err)
	}
	name := b.cfg.SlurmName(s.JobID, s.Attempt)
	if id, err := b.find(ctx, name); err != nil || id != "" {
		return id, err
	}
	stdout, _ := b.cfg.LogPaths(s.JobID, s.Attempt)
	for _, dir := range []string{b.cfg.CheckpointPath(s.JobID), filepath.Dir(stdout)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("submit %s: %w: prepare %s: %v", name, ErrUnavailable, dir, err)
		}
	}
	if err := b.cfg.writeAttempt(s.JobID, s.Attempt, s.Attempt, 0); err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	out, err := b.command(ctx, "sbatch", args, []byte(b.cfg.batchScript(s)))
	if err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	id, err := parseSubmitted(out)
	if err != nil {
		return "", fmt.Errorf("submit %s: %w", name, err)
	}
	return id, nil
}

// find returns the id of this user's job named name, from squeue, or else from sacct
// (a job that ended long enough ago has left squeue); "" when Slurm has none. When
// sacct cannot be asked, squeue's answer stands.
func (b *Backend) find(ctx context.Context, name string) (string, error) {
	out, err := b.command(ctx, "squeue", []string{"-h", "--me", "-t", "all", "-n", name, "-o", "%A"}, nil)
	if err != nil {
		return "", fmt.Errorf("look for an earlier submission of %s: %w", name, err)
	}
	if id, err := onlyID("squeue", out); err != nil || id != "" {
		return id, err
	}
	out, err = b.command(ctx, "sacct", []string{"-X", "-n", "-P", "-S", "now-30days", "--name=" + name, "--format=JobIDRaw"}, nil)
	if err != nil {
		return "", nil
	}
	return onlyID("sacct", out)
}

// onlyID reads a list of job ids that should hold at most one distinct id.
func onlyID(command string, out []byte) (string, error) {
	id := ""
	for _, l := range strings.Fields(string(out)) {
		if !validJobID(l) {
			return "", &ParseError{Command: command, Text: l, Field: "job_id", Err: errNotJobID}
		}
		if id != "" && l != id {
			return "", &ParseError{Command: command, Text: string(out), Err: errors.New("two jobs of one Gantry attempt")}
		}
		id = l
	}
	return id, nil
}

// ownJob checks, before Gantry acts on Slurm job id, that the id is still the job
// it submitted as attempt submitted of job jobID (its name says so): Slurm gives
// its ids anew after they restart, and scancel or scontrol on a bare id would act on
// whichever job holds it now, anyone's. A job under the id with another name is an
// *OtherJobError, action saying what was not done to it. present says whether
// slurmctld holds the job (it forgets ended jobs after MinJobAge), ended whether
// it is over.
func (b *Backend) ownJob(ctx context.Context, action, id string, jobID int64, submitted int) (present, ended bool, err error) {
	out, err := b.command(ctx, "squeue", []string{"-h", "-t", "all", "-j", id, "-o", "%T" + sep + "%u" + sep + "%j"}, nil)
	var rejected *RejectedError
	if errors.As(err, &rejected) && rejected.Reason == invalidJobID {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read which job Slurm job %s is: %w", id, err)
	}
	name := b.cfg.SlurmName(jobID, submitted)
	nums, text := lines(out)
	ended = true
	for i, l := range text {
		f, err := fields(l, 3)
		if err != nil {
			return false, false, lineError("squeue", nums[i], l, id, err)
		}
		if f[2] != name {
			return false, false, &OtherJobError{Action: action, ID: id, Want: name, Name: f[2], User: clean(f[1])}
		}
		phase, ok := phaseOf(strings.TrimSpace(f[0]))
		ended = ended && ok && phase == phaseDone
	}
	return len(text) > 0, ended, nil
}

// invalidJobID is Slurm's answer about a job id that slurmctld does not hold.
const invalidJobID = "Invalid job id specified"

// Cancel ends Gantry's job attempt submitted of job jobID, Slurm job id, with
// scancel; a job that already ended is not an error, and another job under the id
// is left alone (*OtherJobError).
func (b *Backend) Cancel(ctx context.Context, id string, jobID int64, submitted int) error {
	present, ended, err := b.ownJob(ctx, "cancelled", id, jobID, submitted)
	switch {
	case err != nil:
		return otherOr(err, "cancel Slurm job "+id)
	case !present || ended:
		return nil
	}
	// By name too: should the id pass to another job in between, scancel spares it.
	if _, err := b.command(ctx, "scancel", []string{"--name=" + b.cfg.SlurmName(jobID, submitted), id}, nil); err != nil {
		return fmt.Errorf("cancel Slurm job %s: %w", id, err)
	}
	return nil
}

// Hold keeps Gantry's pending job, attempt submitted of job jobID, from starting
// (scontrol hold), unless Slurm gives id to another job (*OtherJobError).
func (b *Backend) Hold(ctx context.Context, id string, jobID int64, submitted int) error {
	if _, _, err := b.ownJob(ctx, "held", id, jobID, submitted); err != nil {
		return otherOr(err, "hold Slurm job "+id)
	}
	if _, err := b.command(ctx, "scontrol", []string{"hold", id}, nil); err != nil {
		return fmt.Errorf("hold Slurm job %s: %w", id, err)
	}
	return nil
}

// Release lets a held job start again (scontrol release) as attempt of its Gantry
// job, which it was submitted to run as attempt submitted: its batch script learns
// so from its attempt file (attempt.go), written first with how often Slurm has
// requeued the job so far. Another job under the id is left alone (*OtherJobError).
func (b *Backend) Release(ctx context.Context, id string, jobID int64, submitted, attempt int) error {
	if _, _, err := b.ownJob(ctx, "released", id, jobID, submitted); err != nil {
		return otherOr(err, "release Slurm job "+id)
	}
	out, err := b.command(ctx, "squeue", []string{"-h", "-t", "all", "-j", id, "-O", "restartcnt"}, nil)
	if err != nil {
		return fmt.Errorf("release Slurm job %s: read its restart count: %w", id, err)
	}
	restarts, err := parseRestarts(out)
	if err != nil {
		return fmt.Errorf("release Slurm job %s: %w", id, err)
	}
	if err := b.cfg.writeAttempt(jobID, submitted, attempt, restarts); err != nil {
		return fmt.Errorf("release Slurm job %s as attempt %d: %w", id, attempt, err)
	}
	if _, err := b.command(ctx, "scontrol", []string{"release", id}, nil); err != nil {
		return fmt.Errorf("release Slurm job %s: %w", id, err)
	}
	return nil
}

// otherOr returns an *OtherJobError as it is (it names the job and what was not
// done to it), and any other error wrapped with what was being done.
func otherOr(err error, doing string) error {
	var other *OtherJobError
	if errors.As(err, &other) {
		return other
	}
	return fmt.Errorf("%s: %w", doing, err)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return shorten(l)
		}
	}
	return "no answer"
}

// Checkpoint sends USR1 to the batch script of Gantry's running job, attempt
// submitted of job jobID (scancel --batch), which writes the checkpoint request and
// passes the signal to the command, as on preemption; Gantry cancels the job once the
// checkpoint grace has passed. Another job under the id is left alone (*OtherJobError).
func (b *Backend) Checkpoint(ctx context.Context, id string, jobID int64, submitted int) error {
	if _, _, err := b.ownJob(ctx, "signalled to checkpoint", id, jobID, submitted); err != nil {
		return otherOr(err, "signal Slurm job "+id+" to checkpoint")
	}
	args := []string{"--batch", "--signal=USR1", "--name=" + b.cfg.SlurmName(jobID, submitted), id}
	if _, err := b.command(ctx, "scancel", args, nil); err != nil {
		return fmt.Errorf("signal Slurm job %s to checkpoint: %w", id, err)
	}
	return nil
}
