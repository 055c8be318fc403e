package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/slurm/slurmtest"
)

// Through the real binary on the test Slurm: an admin applies a Slurm pool with
// `gantry pool apply`; `gantry serve` shows the partition's node, runs a job submitted
// through the API on Slurm, reports it running and succeeded with its output through
// the logs API, and cancels a running one in Slurm.
func TestE2EServeRunsJobsOnSlurm(t *testing.T) {
	conf := slurmtest.Conf(t)
	slurmCmd := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		return cmd
	}
	t.Cleanup(func() {
		if out, _ := slurmCmd("squeue", "-h", "-o", "%A").Output(); len(strings.Fields(string(out))) > 0 {
			_ = slurmCmd("scancel", strings.Fields(string(out))...).Run()
		}
	})
	dir, shared := t.TempDir(), t.TempDir()
	file := filepath.Join(t.TempDir(), "pools.yaml")
	spec := fmt.Sprintf(`pools:
  - name: hpc
    provider: slurm
    capacity_type: owned
    provider_config:
      partition: gpu
      slurm_conf: %s
      log_dir: %s/logs
      checkpoint_dir: %s/ckpt
      qos: {research: research}
      gres_types: {A100-80GB: a100, L4-24GB: l4}
`, conf, shared, shared)
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := gantry(t, nil, "pool", "apply", file, "--data-dir", dir); code != 0 {
		t.Fatalf("pool apply: exit %d: %s", code, stderr)
	}
	url, _ := serveFor(t, dir, "--no-local-agent")
	a := api{t: t, url: url, token: apiToken(t, dir)}

	hello := a.submit(`sleep 2; echo "hi from $GANTRY_JOB_ID on $SLURMD_NODENAME"`)
	a.wait(hello.ID, "running")
	done := a.wait(hello.ID, "succeeded")
	if done.ExitCode == nil || *done.ExitCode != 0 || len(done.Allocations) != 1 || done.Allocations[0].Node != "hpc.node1" {
		t.Fatalf("job = %+v", done)
	}
	want := fmt.Sprintf("hi from %d on node1\n", hello.ID)
	deadline := time.Now().Add(30 * time.Second)
	for got := a.logs(hello.ID); got != want; got = a.logs(hello.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("logs = %q, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, detail := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d", hello.ID), "")
	if !strings.Contains(detail, "submitted to Slurm partition gpu as job") {
		t.Errorf("the job's events do not name its Slurm job: %s", detail)
	}

	long := a.submit("sleep 300")
	a.wait(long.ID, "running")
	if status, out := a.do(http.MethodPost, fmt.Sprintf("/api/v1/jobs/%d/cancel", long.ID), "{}"); status != http.StatusOK {
		t.Fatalf("cancel = %d %s", status, out)
	}
	a.wait(long.ID, "cancelled")
	deadline = time.Now().Add(60 * time.Second)
	for {
		out, _ := slurmCmd("squeue", "-h", "-t", "all", "-o", "%j %T").Output()
		if line := lineEnding(string(out), fmt.Sprintf("-%d-1", long.ID)); strings.HasSuffix(line, " CANCELLED") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the cancelled job's Slurm job: %q in\n%s", line, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lineEnding returns the line of out whose first word ends with suffix.
func lineEnding(out, suffix string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(f[0], suffix) {
			return l
		}
	}
	return ""
}
