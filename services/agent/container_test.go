package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

func TestRunArgs(t *testing.T) {
	c := containerSpec{
		Runtime: agentapi.RuntimeDocker, CLI: "/usr/bin/docker", Name: "gantry-j7-a2-r0-0a1b2c3d", Image: "nvcr.io/nvidia/pytorch:24.05-py3",
		Network: "host", GPUs: []string{"GPU-a", "MIG-b"}, CPUMilli: 1500, MemoryMiB: 2048,
		Mounts: []mount{{Host: "/data/attempts/j7/work", Container: containerWork}, {Host: "/data/checkpoints/7", Container: containerCheckpoint}},
		Labels: map[string]string{"gantry.replica": "0", "gantry.job": "7"},
	}
	got := runArgs(c, "/data/attempts/j7/container.env", []string{"python", "train.py", "--epochs", "3"})
	want := []string{"run", "--name", "gantry-j7-a2-r0-0a1b2c3d", "--sig-proxy=false", "--init", "--pull", "never",
		"--network", "host", "--workdir", "/gantry/work", "--env-file", "/data/attempts/j7/container.env",
		"--label", "gantry.job=7", "--label", "gantry.replica=0",
		"--volume", "/data/attempts/j7/work:/gantry/work", "--volume", "/data/checkpoints/7:/gantry/checkpoint",
		"--cpus", "1.500", "--memory", "2048m", "--memory-swap", "2048m",
		"--gpus", `"device=GPU-a,MIG-b"`,
		"--entrypoint", "python", "nvcr.io/nvidia/pytorch:24.05-py3", "train.py", "--epochs", "3"}
	if !slices.Equal(got, want) {
		t.Errorf("docker run args:\n got %q\nwant %q", got, want)
	}

	c.Runtime, c.CPUMilli, c.MemoryMiB = agentapi.RuntimePodman, 0, 0
	got = runArgs(c, "/e", []string{"/bin/sh"})
	tail := got[slices.Index(got, "--volume"):]
	want = []string{"--volume", "/data/attempts/j7/work:/gantry/work", "--volume", "/data/checkpoints/7:/gantry/checkpoint",
		"--device", "nvidia.com/gpu=GPU-a", "--device", "nvidia.com/gpu=MIG-b", "--entrypoint", "/bin/sh", "nvcr.io/nvidia/pytorch:24.05-py3"}
	if !slices.Equal(tail, want) {
		t.Errorf("podman run args without limits end in\n got %q\nwant %q", tail, want)
	}
	if args := gpuArgs(agentapi.RuntimeDocker, nil); args != nil {
		t.Errorf("a job without GPUs asks for %q", args)
	}
	if args := gpuArgs(agentapi.RuntimeDocker, []string{"GPU-x"}); !slices.Equal(args, []string{"--gpus", `"device=GPU-x"`}) {
		t.Errorf("one GPU: %q", args)
	}
	for milli, want := range map[int64]string{1: "0.001", 250: "0.250", 1000: "1.000", 12345: "12.345"} {
		if got := cpus(milli); got != want {
			t.Errorf("cpus(%d) = %q, want %q", milli, got, want)
		}
	}
}

func TestEnvFileText(t *testing.T) {
	b, err := envFileText([]string{"A=  two  spaces ", `B=x=y "q" $HOME`, "C="})
	if err != nil || string(b) != "A=  two  spaces \nB=x=y \"q\" $HOME\nC=\n" {
		t.Fatalf("env file = %q, %v", b, err)
	}
	if _, err := envFileText([]string{"OK=1", "PEM=-----BEGIN\nKEY"}); err == nil || !strings.Contains(err.Error(), "variable PEM holds a line break") {
		t.Fatalf("a value with a line break: %v", err)
	}
}

// The runtimes' answers, as recorded from docker 20.10.24 (client 28.2.2) and podman 4.3.1.
func TestParseRuntimeAnswers(t *testing.T) {
	for _, file := range []string{"docker-state-running.json", "podman-state-running.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		st, err := parseState(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !st.Running || st.Status != "running" || st.Pid <= 0 {
			t.Errorf("%s: %+v, want running with a pid", file, st)
		}
	}
	for _, file := range []string{"docker-state-killed.json", "podman-state-killed.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		st, err := parseState(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ex := containerExit(st, 64)
		if st.Running || ex.ExitCode != 137 || ex.Signal != "SIGKILL" || ex.EndedAt.Year() != 2026 || ex.Message != "" {
			t.Errorf("%s: %+v -> %+v, want exit 137 by SIGKILL", file, st, ex)
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", "runtime-errors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		kind, msg, _ := strings.Cut(line, "\t")
		if got := noSuchObject(msg); got != (kind == "missing") {
			t.Errorf("noSuchObject(%q) = %v", msg, got)
		}
		if got := notRunning(msg); got != (kind == "stopped") {
			t.Errorf("notRunning(%q) = %v", msg, got)
		}
	}
	for _, bad := range []string{"", "\n", "not json", `{"Running":true}`} {
		if _, err := parseState([]byte(bad)); err == nil {
			t.Errorf("parseState(%q) took it", bad)
		}
	}
	oom := containerExit(&containerState{Status: "exited", ExitCode: 137, OOMKilled: true, FinishedAt: time.Now()}, 32)
	if !strings.Contains(oom.Message, "memory limit of 32 MiB") {
		t.Errorf("OOM exit = %+v", oom)
	}
	if ex := containerExit(&containerState{Status: "exited", ExitCode: 3}, 0); ex.Signal != "" || ex.ExitCode != 3 || ex.EndedAt.IsZero() {
		t.Errorf("plain exit = %+v", ex)
	}
}

func TestContainerNames(t *testing.T) {
	ref := agentapi.AttemptRef{JobID: 7, Attempt: 2, Replica: 1}
	a, b := containerName(ref, "/one/attempts/j7-a2-r1"), containerName(ref, "/two/attempts/j7-a2-r1")
	if a == b || !strings.HasPrefix(a, "gantry-j7-a2-r1-") || a != containerName(ref, "/one/attempts/j7-a2-r1") {
		t.Errorf("names %q and %q: want stable, distinct per directory", a, b)
	}
}
