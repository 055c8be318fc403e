package slurm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

func testConfig(dir string) Config {
	return Config{
		Partition: "gpu", Account: "ml", LogDir: dir + "/logs", CheckpointDir: dir + "/ckpt",
		QOS:       map[string]string{"production": "prod", "test": "scavenger"},
		GRESTypes: map[string]string{"A100-80GB": "a100", "3g.40gb": "a100_3g.40gb"},
	}
}

func TestSbatchArgs(t *testing.T) {
	c := testConfig("/shared")
	args, err := c.sbatchArgs(JobSpec{
		JobID: 12, Attempt: 2, Name: "train 'resnet'\n", Command: []string{"python", "train.py"}, GPUs: 2, GPUModel: "A100-80GB",
		CPUMilli: 3500, MemoryMiB: 16384, TimeLimit: 26*time.Hour + 90*time.Second, PriorityClass: "production", CheckpointGrace: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--parsable", "--job-name=gantry-12-2", "--comment=gantry job 12 attempt 2: train resnet", "--partition=gpu",
		"--nodes=1", "--ntasks-per-node=1", "--cpus-per-task=4", "--chdir=/shared/ckpt/job-12",
		"--output=/shared/logs/gantry-12-2.out", "--error=/shared/logs/gantry-12-2.err", "--open-mode=append", "--export=NIL",
		"--requeue", "--signal=B:USR1@120", "--account=ml", "--qos=prod", "--mem=16384M", "--time=1-02:01:30", "--gres=gpu:a100:2",
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args:\n got %q\nwant %q", args, want)
	}

	c.GPUOption = "gpus"
	args, err = c.sbatchArgs(JobSpec{JobID: 1, Attempt: 1, Command: []string{"x"}, GPUs: 1, MIGProfile: "3g.40gb", PriorityClass: "research"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	if !strings.Contains(joined, "--gpus-per-node=a100_3g.40gb:1") || strings.Contains(joined, "--qos") || !strings.Contains(joined, "--signal=B:USR1@60") || !strings.Contains(joined, "--cpus-per-task=1") {
		t.Errorf("MIG slice, unmapped class, default signal lead, at least one CPU: %s", joined)
	}
	c.GPUOption = ""
	args, _ = c.sbatchArgs(JobSpec{JobID: 1, Attempt: 1, Command: []string{"x"}, GPUs: 4})
	if !strings.Contains(strings.Join(args, " "), "--gres=gpu:4") {
		t.Errorf("any model: %q", args)
	}
}

func TestSbatchArgsRefusesWhatSlurmCannotRun(t *testing.T) {
	c := testConfig("/shared")
	ok := JobSpec{JobID: 1, Attempt: 1, Command: []string{"x"}}
	cases := []struct {
		field string
		edit  func(*JobSpec)
	}{
		{"gpu_milli", func(s *JobSpec) { s.GPUs, s.GPUMilli = 0, 250 }},
		{"gpu_model", func(s *JobSpec) { s.GPUs, s.GPUModel = 1, "H100-80GB" }},
		{"image", func(s *JobSpec) { s.Image = "nvcr.io/nvidia/pytorch:24.01-py3" }},
		{"env", func(s *JobSpec) { s.Env = map[string]string{"SLURM_JOB_ID": "1"} }},
		{"env", func(s *JobSpec) { s.Env = map[string]string{"BAD-NAME": "1"} }},
		{"command", func(s *JobSpec) { s.Command = nil }},
		{"job", func(s *JobSpec) { s.Attempt = 0 }},
		{"resources", func(s *JobSpec) { s.MemoryMiB = -1 }},
	}
	for _, tc := range cases {
		s := ok
		tc.edit(&s)
		_, err := c.sbatchArgs(s)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	_, err := c.sbatchArgs(JobSpec{JobID: 1, Attempt: 1, Command: []string{"x"}, GPUs: 1, GPUModel: "H100-80GB"})
	if err == nil || !strings.Contains(err.Error(), "H100-80GB has no Slurm GRES type on partition gpu; the pool's gres_types map 3g.40gb→a100_3g.40gb, A100-80GB→a100") {
		t.Errorf("unmapped model message: %v", err)
	}
}

func TestCommandLineUsesSrunForContainersAndReplicas(t *testing.T) {
	c := testConfig("/shared")
	c.Container = "pyxis"
	got := c.commandLine(JobSpec{JobID: 3, Command: []string{"python", "x.py"}, Image: "nvcr.io/nvidia/pytorch:24.01-py3"})
	want := []string{"srun", "--ntasks=1", "--ntasks-per-node=1", "--container-image=nvcr.io#nvidia/pytorch:24.01-py3",
		"--container-mounts=/shared/ckpt/job-3:/shared/ckpt/job-3", "python", "x.py"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("container:\n got %q\nwant %q", got, want)
	}
	c.ContainerMounts = []string{"/datasets:/data:ro", "/scratch/gantry:/scratch"}
	got = c.commandLine(JobSpec{JobID: 3, Command: []string{"python", "x.py"}, Image: "ubuntu:22.04", Replicas: 2})
	want = []string{"srun", "--ntasks=2", "--ntasks-per-node=1", "--container-image=ubuntu:22.04",
		"--container-mounts=/shared/ckpt/job-3:/shared/ckpt/job-3,/datasets:/data:ro,/scratch/gantry:/scratch", "python", "x.py"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("container with the pool's mounts, on two nodes:\n got %q\nwant %q", got, want)
	}
	if got := c.commandLine(JobSpec{Command: []string{"x"}, Replicas: 2}); !reflect.DeepEqual(got, []string{"srun", "--ntasks=2", "--ntasks-per-node=1", "x"}) {
		t.Errorf("replicas: %q", got)
	}
	if got := c.commandLine(JobSpec{Command: []string{"x"}}); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("plain: %q", got)
	}
}

// The batch script of a job with an image on a pool with pyxis runs its command in
// the container, through srun; without a container plugin the image is refused for
// the pool, naming the image field and what to do.
func TestBatchScriptRunsTheImageThroughPyxis(t *testing.T) {
	c := testConfig("/shared")
	c.Container, c.ContainerMounts = "pyxis", []string{"/datasets:/data:ro"}
	s := JobSpec{JobID: 9, Attempt: 1, Command: []string{"python", "train.py", "--out", "it's here"}, Image: "registry.example.com:5000/ml/train:1.2"}
	if _, err := c.sbatchArgs(s); err != nil {
		t.Fatalf("a pool with pyxis refuses an image: %v", err)
	}
	want := `'srun' '--ntasks=1' '--ntasks-per-node=1' '--container-image=registry.example.com:5000#ml/train:1.2' ` +
		`'--container-mounts=/shared/ckpt/job-9:/shared/ckpt/job-9,/datasets:/data:ro' 'python' 'train.py' '--out' 'it'\''s here' &`
	if script := c.batchScript(s); !strings.Contains(script, "\n"+want+"\n") {
		t.Errorf("the script lacks the line\n%s\nscript:\n%s", want, script)
	}
	c.Container, c.ContainerMounts = "", nil
	_, err := c.sbatchArgs(s)
	var fe *models.FieldError
	if !errors.As(err, &fe) || fe.Field != "image" || !strings.Contains(fe.Message, "runs plain commands only (no container plugin configured)") {
		t.Errorf("an image on a pool without a container plugin: %v", err)
	}
}

func TestPyxisImage(t *testing.T) {
	for ref, want := range map[string]string{
		"ubuntu:22.04":                          "ubuntu:22.04",
		"pytorch/pytorch:2.1.0":                 "pytorch/pytorch:2.1.0",
		"docker.io/library/ubuntu:22.04":        "library/ubuntu:22.04",
		"nvcr.io/nvidia/pytorch:24.01-py3":      "nvcr.io#nvidia/pytorch:24.01-py3",
		"localhost/train:dev":                   "localhost#train:dev",
		"127.0.0.1:5000/train:dev":              "127.0.0.1:5000#train:dev",
		"ghcr.io/org/img@sha256:0123456789abcd": "ghcr.io#org/img@sha256:0123456789abcd",
	} {
		if got := pyxisImage(ref); got != want {
			t.Errorf("pyxisImage(%q) = %q, want %q", ref, got, want)
		}
	}
}

// startScript runs the batch script as Slurm would, with bash, outside Slurm.
func startScript(t *testing.T, c Config, s JobSpec) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	return startScriptEnv(t, c, s, "", func() {})
}

// startScriptEnv is startScript on the run after restarts requeues ("" for the
// first), with prepare run after Submit's files are written.
func startScriptEnv(t *testing.T, c Config, s JobSpec, restarts string, prepare func()) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	for _, dir := range []string{c.CheckpointPath(s.JobID), c.LogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.writeAttempt(s.JobID, s.Attempt, s.Attempt, 0); err != nil { // as Submit does
		t.Fatal(err)
	}
	prepare()
	cmd := exec.Command("bash", "-s")
	cmd.Env = os.Environ()
	if restarts != "" {
		cmd.Env = append(cmd.Env, "SLURM_RESTART_COUNT="+restarts)
	}
	cmd.Stdin = strings.NewReader(c.batchScript(s))
	cmd.Dir = c.CheckpointPath(s.JobID)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

func TestBatchScriptRunsTheCommandWithItsEnvironment(t *testing.T) {
	c := testConfig(t.TempDir())
	cmd, out := startScript(t, c, JobSpec{JobID: 5, Attempt: 2, Command: []string{"sh", "-c", `echo "$GANTRY_JOB_ID/$GANTRY_ATTEMPT $GANTRY_CHECKPOINT_DIR [$QUOTE]"; exit 3`},
		Env: map[string]string{"QUOTE": `it's "$HOME" $(date)`}})
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("want the command's exit code 3, got %v; output %s", err, out)
	}
	want := "5/2 " + c.CheckpointPath(5) + ` [it's "$HOME" $(date)]` + "\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// The preemption protocol: USR1 → checkpoint request file and USR1 to the command;
// the command saves and exits; the script stays until Slurm's TERM, so that Slurm
// requeues the job instead of counting it completed.
func TestBatchScriptCheckpointsAndWaitsToBeRequeued(t *testing.T) {
	c := testConfig(t.TempDir())
	ckpt := c.CheckpointPath(9)
	victim := `trap 'echo step-42 > "$GANTRY_CHECKPOINT_DIR/state"; exit 0' USR1; echo ready > "$GANTRY_CHECKPOINT_DIR/ready"; while :; do sleep 0.05; done`
	cmd, out := startScript(t, c, JobSpec{JobID: 9, Attempt: 1, Command: []string{"bash", "-c", victim}})
	waitFile(t, filepath.Join(ckpt, "ready"))
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, filepath.Join(ckpt, "state")); got != "step-42\n" {
		t.Errorf("checkpoint: %q", got)
	}
	req := waitFile(t, filepath.Join(ckpt, "checkpoint-request"))
	if _, err := time.Parse("2006-01-02T15:04:05Z", strings.TrimSpace(req)); err != nil {
		t.Errorf("checkpoint request should hold the time: %q", req)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the script ended after the checkpoint (%v): Slurm would count the job completed; output %s", err, out)
	case <-time.After(1500 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the script did not end on TERM")
	}
	if !strings.Contains(out.String(), "waiting for Slurm to requeue the job") {
		t.Errorf("output should say why it waits: %q", out)
	}
}

func TestBatchScriptPassesTermToTheCommand(t *testing.T) {
	c := testConfig(t.TempDir())
	ckpt := c.CheckpointPath(4)
	cmd, _ := startScript(t, c, JobSpec{JobID: 4, Attempt: 1, Command: []string{"bash", "-c",
		`trap 'echo term > "$GANTRY_CHECKPOINT_DIR/got"; exit 143' TERM; echo ready > "$GANTRY_CHECKPOINT_DIR/ready"; while :; do sleep 0.05; done`}})
	waitFile(t, filepath.Join(ckpt, "ready"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("want exit 143 from the command, got %v", err)
	}
	if got := waitFile(t, filepath.Join(ckpt, "got")); got != "term\n" {
		t.Errorf("the command should get TERM: %q", got)
	}
}

// A run's GANTRY_ATTEMPT is the attempt file's attempt plus the requeues since the
// restart count it names; without a readable file the script says so and counts from
// the attempt it was submitted as.
func TestBatchScriptReadsItsAttempt(t *testing.T) {
	c := testConfig(t.TempDir())
	spec := JobSpec{JobID: 6, Attempt: 2, Command: []string{"sh", "-c", `echo "attempt $GANTRY_ATTEMPT"`}}
	cases := []struct {
		file     string // "": none
		restarts string // SLURM_RESTART_COUNT; "": unset
		want     string
	}{
		{"2 0\n", "", "attempt 2\n"},
		{"2 0\n", "1", "attempt 3\n"},
		{"5 1\n", "1", "attempt 5\n"},
		{"5 1\n", "3", "attempt 7\n"},
		{"", "1", "gantry: cannot read " + c.AttemptPath(6, 2) + "; GANTRY_ATTEMPT counts from attempt 2\nattempt 3\n"},
		{"05 1\n", "", "gantry: cannot read " + c.AttemptPath(6, 2) + "; GANTRY_ATTEMPT counts from attempt 2\nattempt 2\n"},
		{"5; rm -rf / 1\n", "", "gantry: cannot read " + c.AttemptPath(6, 2) + "; GANTRY_ATTEMPT counts from attempt 2\nattempt 2\n"},
	}
	for _, tc := range cases {
		cmd, out := startScriptEnv(t, c, spec, tc.restarts, func() {
			_ = os.Remove(c.AttemptPath(6, 2))
			if tc.file != "" {
				if err := os.WriteFile(c.AttemptPath(6, 2), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
		if err := cmd.Wait(); err != nil {
			t.Fatalf("file %q restarts %q: %v: %s", tc.file, tc.restarts, err, out)
		}
		if out.String() != tc.want {
			t.Errorf("file %q restarts %q: output %q, want %q", tc.file, tc.restarts, out.String(), tc.want)
		}
	}
}
