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

// Cancel ends a job with scancel; a job that already ended is not an error.
func (b *Backend) Cancel(ctx context.Context, id string) error {
	if _, err := b.command(ctx, "scancel", []string{id}, nil); err != nil {
		return fmt.Errorf("cancel Slurm job %s: %w", id, err)
	}
	return nil
}

// Hold keeps a pending job from starting (scontrol hold).
func (b *Backend) Hold(ctx context.Context, id string) error {
	if _, err := b.command(ctx, "scontrol", []string{"hold", id}, nil); err != nil {
		return fmt.Errorf("hold Slurm job %s: %w", id, err)
	}
	return nil
}

// Release lets a held job start again (scontrol release) as attempt of its Gantry
// job, which it was submitted to run as attempt submitted: its batch script learns
// so from its attempt file (attempt.go), written first with how often Slurm has
// requeued the job so far.
func (b *Backend) Release(ctx context.Context, id string, jobID int64, submitted, attempt int) error {
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

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return shorten(l)
		}
	}
	return "no answer"
}

// Checkpoint sends USR1 to a running job's batch script (scancel --batch), which
// writes the checkpoint request and passes the signal to the command, as on
// preemption; Gantry cancels the job once the checkpoint grace has passed.
func (b *Backend) Checkpoint(ctx context.Context, id string) error {
	if _, err := b.command(ctx, "scancel", []string{"--batch", "--signal=USR1", id}, nil); err != nil {
		return fmt.Errorf("signal Slurm job %s to checkpoint: %w", id, err)
	}
	return nil
}
