package slurm

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// JobSpec is one attempt of a Gantry job, as the Slurm backend submits it.
type JobSpec struct {
	JobID   int64
	Attempt int
	Name    string // the Gantry job's name, shown in Slurm's comment
	Command []string
	Env     map[string]string
	// Image is the container image; "" runs Command as a plain process.
	Image string
	// GPUs per replica, of GPUModel (a Gantry model key; "" for any) or MIGProfile.
	GPUs       int
	GPUMilli   int // a share of one GPU: not something Slurm schedules
	GPUModel   string
	MIGProfile string
	CPUMilli   int64
	MemoryMiB  int64
	Replicas   int // nodes; 0 or 1 for one
	// TimeLimit ends the job in Slurm; 0 leaves the partition's default.
	TimeLimit     time.Duration
	PriorityClass string
	// CheckpointGrace is how long before its time limit the job gets USR1 to checkpoint;
	// on preemption it gets USR1 at once and the QOS GraceTime to save one.
	CheckpointGrace time.Duration
}

// SlurmName is the Slurm job name of an attempt: submissions are found again by it.
// It holds the Installation, so that another Gantry on the same cluster (or this one
// with a new database) never takes this one's jobs for its own.
func (c Config) SlurmName(jobID int64, attempt int) string {
	if c.Installation == "" {
		return fmt.Sprintf("gantry-%d-%d", jobID, attempt)
	}
	return fmt.Sprintf("gantry-%s-%d-%d", c.Installation, jobID, attempt)
}

// LogPaths are the files an attempt's stdout and stderr go to, under LogDir.
func (c Config) LogPaths(jobID int64, attempt int) (stdout, stderr string) {
	base := filepath.Join(c.LogDir, c.SlurmName(jobID, attempt))
	return base + ".out", base + ".err"
}

// CheckpointPath is a job's GANTRY_CHECKPOINT_DIR; every attempt shares it, so that
// an attempt resumes from the checkpoint the one before it saved.
func (c Config) CheckpointPath(jobID int64) string {
	if c.Installation == "" {
		return filepath.Join(c.CheckpointDir, fmt.Sprintf("job-%d", jobID))
	}
	return filepath.Join(c.CheckpointDir, fmt.Sprintf("%s-job-%d", c.Installation, jobID))
}

// defaultSignalLead is Slurm's own default --signal time.
const defaultSignalLead = 60 * time.Second

// sbatchArgs are the options an attempt is submitted with; the script comes on stdin.
func (c Config) sbatchArgs(s JobSpec) ([]string, error) {
	if err := c.checkSpec(s); err != nil {
		return nil, err
	}
	stdout, stderr := c.LogPaths(s.JobID, s.Attempt)
	replicas := max(s.Replicas, 1)
	args := []string{
		"--parsable",
		"--job-name=" + c.SlurmName(s.JobID, s.Attempt),
		"--comment=" + comment(s),
		"--partition=" + c.Partition,
		"--nodes=" + strconv.Itoa(replicas),
		"--ntasks-per-node=1",
		"--cpus-per-task=" + strconv.FormatInt(max((s.CPUMilli+999)/1000, 1), 10),
		"--chdir=" + c.CheckpointPath(s.JobID),
		"--output=" + stdout,
		"--error=" + stderr,
		"--open-mode=append",
		// Only SLURM_* variables cross from the server: the script sets the rest, so
		// nothing of the server's environment (database URL, tokens) reaches the job.
		"--export=NIL",
		"--requeue",
		fmt.Sprintf("--signal=B:USR1@%d", signalLead(s.CheckpointGrace)),
	}
	if c.Account != "" {
		args = append(args, "--account="+c.Account)
	}
	if q, ok := c.QOS[s.PriorityClass]; ok {
		args = append(args, "--qos="+q)
	}
	if s.MemoryMiB > 0 {
		args = append(args, fmt.Sprintf("--mem=%dM", s.MemoryMiB))
	}
	if s.TimeLimit > 0 {
		args = append(args, "--time="+slurmDuration(s.TimeLimit))
	}
	if s.GPUs > 0 {
		gpu, err := c.gpuRequest(s)
		if err != nil {
			return nil, err
		}
		args = append(args, gpu)
	}
	return args, nil
}

func (c Config) checkSpec(s JobSpec) error {
	switch {
	case s.JobID <= 0 || s.Attempt <= 0:
		return models.Invalid("job", "needs a job id and an attempt number, got %d and %d", s.JobID, s.Attempt)
	case len(s.Command) == 0 || s.Command[0] == "":
		return models.Invalid("command", "must name a program to run")
	case s.GPUMilli > 0:
		return models.Invalid("gpu_milli", "Slurm pools run whole GPUs only; ask for gpus instead of a share of one")
	case s.GPUs < 0 || s.CPUMilli < 0 || s.MemoryMiB < 0 || s.Replicas < 0 || s.TimeLimit < 0:
		return models.Invalid("resources", "must not be negative")
	case s.Image != "" && c.Container == "":
		return models.Invalid("image", "pool on Slurm partition %s runs plain commands only (no container plugin configured); use the plain-command image", c.Partition)
	}
	for k := range s.Env {
		if !envName(k) || strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "GANTRY_") {
			return models.Invalid("env", "%q is not a variable a job may set (letters, digits and _, not SLURM_* or GANTRY_*)", k)
		}
	}
	return nil
}

// gpuRequest is the GPU option: --gres=gpu[:type]:N or --gpus-per-node=[type:]N.
func (c Config) gpuRequest(s JobSpec) (string, error) {
	typ := ""
	if want := firstNonEmpty(s.MIGProfile, s.GPUModel); want != "" {
		t, ok := c.GRESTypes[want]
		if !ok {
			return "", models.Invalid("gpu_model", "%s has no Slurm GRES type on partition %s; the pool's gres_types map %s", want, c.Partition, knownTypes(c.GRESTypes))
		}
		typ = t
	}
	if c.GPUOption == "gpus" {
		if typ != "" {
			return fmt.Sprintf("--gpus-per-node=%s:%d", typ, s.GPUs), nil
		}
		return fmt.Sprintf("--gpus-per-node=%d", s.GPUs), nil
	}
	if typ != "" {
		return fmt.Sprintf("--gres=gpu:%s:%d", typ, s.GPUs), nil
	}
	return fmt.Sprintf("--gres=gpu:%d", s.GPUs), nil
}

func knownTypes(m map[string]string) string {
	if len(m) == 0 {
		return "no model"
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"→"+m[k])
	}
	return strings.Join(parts, ", ")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// comment is what squeue shows next to the job: which Gantry job this is.
func comment(s JobSpec) string {
	c := fmt.Sprintf("gantry job %d attempt %d", s.JobID, s.Attempt)
	if name := printable(s.Name); name != "" {
		c += ": " + name
	}
	if len(c) > 120 {
		c = c[:120]
	}
	return c
}

// printable keeps the characters of s that are safe on one line of squeue output.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\'' || r == '"' {
			return -1
		}
		return r
	}, s)
}

func signalLead(grace time.Duration) int {
	if grace <= 0 {
		grace = defaultSignalLead
	}
	return int(min(grace.Round(time.Second)/time.Second, 65535))
}

// slurmDuration writes d as days-hours:minutes:seconds, which sbatch reads exactly.
func slurmDuration(d time.Duration) string {
	secs := int64((d + time.Second - 1) / time.Second)
	return fmt.Sprintf("%d-%02d:%02d:%02d", secs/86400, secs%86400/3600, secs%3600/60, secs%60)
}

func envName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// batchScript is the script an attempt runs. It sets the job's environment and runs
// the command as a child, because of how Slurm preempts: with --signal=B:USR1 and
// preempt_send_user_signal the batch shell gets USR1 when the job is chosen for
// preemption, and is killed and requeued at the end of the QOS grace time. The script
// writes a checkpoint request and passes USR1 on; if the command then exits, the
// script waits for Slurm's TERM rather than exit, since a batch script that exits
// ends the job as completed and it would never be requeued.
func (c Config) batchScript(s JobSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Gantry job %d attempt %d, submitted by Gantry's Slurm backend.\n", s.JobID, s.Attempt)
	b.WriteString("export PATH=\"${PATH:-/usr/local/bin:/usr/bin:/bin}\"\n")
	fmt.Fprintf(&b, "export GANTRY_JOB_ID=%d\n", s.JobID)
	b.WriteString(c.attemptScript(s))
	fmt.Fprintf(&b, "export GANTRY_CHECKPOINT_DIR=%s\n", shellQuote(c.CheckpointPath(s.JobID)))
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(s.Env[k]))
	}
	b.WriteString(`mkdir -p "$GANTRY_CHECKPOINT_DIR"
checkpointing=0 stopping=0 child=
on_usr1() {
  checkpointing=1
  date -u +%Y-%m-%dT%H:%M:%SZ >"$GANTRY_CHECKPOINT_DIR/checkpoint-request"
  [ -n "$child" ] && kill -USR1 "$child" 2>/dev/null
}
on_term() { stopping=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null; }
trap on_usr1 USR1
trap on_term TERM
`)
	b.WriteString(strings.Join(quoteAll(c.commandLine(s)), " "))
	b.WriteString(` &
child=$!
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"; rc=$?
if [ "$checkpointing" = 1 ] && [ "$stopping" = 0 ]; then
  echo "gantry: the command exited after a checkpoint request; waiting for Slurm to requeue the job" >&2
  while [ "$stopping" = 0 ]; do sleep 1 & wait $!; done
fi
exit "$rc"
`)
	return b.String()
}

// commandLine is what the script runs: the command itself, or through srun when it
// needs a container (pyxis) or runs on several nodes.
func (c Config) commandLine(s JobSpec) []string {
	if s.Image == "" && s.Replicas <= 1 {
		return s.Command
	}
	line := []string{"srun", fmt.Sprintf("--ntasks=%d", max(s.Replicas, 1)), "--ntasks-per-node=1"}
	if s.Image != "" {
		ckpt := c.CheckpointPath(s.JobID)
		mounts := append([]string{ckpt + ":" + ckpt}, c.ContainerMounts...)
		line = append(line, "--container-image="+pyxisImage(s.Image), "--container-mounts="+strings.Join(mounts, ","))
	}
	return append(line, s.Command...)
}

// pyxisImage writes an image reference as pyxis reads it, an enroot URI: a registry
// is set off by # rather than /, (nvcr.io/nvidia/pytorch:24.01-py3 is
// nvcr.io#nvidia/pytorch:24.01-py3), and Docker Hub is enroot's default registry.
// The first part of a reference names a registry when it has a dot or a port, or is
// localhost, as Docker reads references.
func pyxisImage(ref string) string {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return ref
	}
	if host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io" {
		return rest
	}
	return host + "#" + rest
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellQuote(w)
	}
	return out
}

// shellQuote makes s one shell word, whatever it holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
