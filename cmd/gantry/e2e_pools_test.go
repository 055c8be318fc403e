package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
)

// e2eProviderEnv makes the test binary an exec provider's script: its value is the
// directory of a local "cloud" whose machines are real `gantry agent` processes.
// e2eBinaryEnv names the gantry binary those agents run.
const (
	e2eProviderEnv = "GANTRY_E2E_PROVIDER"
	e2eBinaryEnv   = "GANTRY_E2E_BINARY"
)

// localMachine is one machine of the local cloud: an agent process.
type localMachine struct {
	Pool string `json:"pool"`
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// e2eProviderMain answers one exec provider call: create starts an agent per node
// (in a session of its own, so it outlives this script) that joins with the node's
// token; delete stops it; list reports the pool's agents that are alive.
func e2eProviderMain(dir string) int {
	var req struct {
		Action string `json:"action"`
		Pool   struct {
			Name     string         `json:"name"`
			Template pools.Template `json:"template"`
		} `json:"pool"`
		Server string          `json:"server"`
		Nodes  []pools.NewNode `json:"nodes"`
		Delete []struct {
			Name string `json:"name"`
		} `json:"delete"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "local cloud:", err)
		return 2
	}
	// Made level by level, not MkdirAll: a call still running when its test ended (the
	// server is killed, not its child) finds the test's directory gone and starts nothing.
	machines := filepath.Join(dir, "machines")
	for _, d := range []string{dir, machines} {
		if err := os.Mkdir(d, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			fmt.Fprintln(os.Stderr, "local cloud:", err)
			return 1
		}
	}
	out := []map[string]string{}
	switch req.Action {
	case "create":
		t := req.Pool.Template
		for _, n := range req.Nodes {
			data := filepath.Join(dir, "agents", n.Name)
			logf, err := os.Create(filepath.Join(dir, n.Name+".log"))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			cmd := exec.Command(os.Getenv(e2eBinaryEnv), "agent", "--server", req.Server, "--join-token", n.JoinToken, "--name", n.Name,
				"--data-dir", data, "--simulate-gpus", t.SimulatedGPUs(), "--cpu-milli", strconv.FormatInt(t.CPUMilli, 10),
				"--memory-mib", strconv.FormatInt(t.MemoryMiB, 10), "--scratch-mib", strconv.FormatInt(t.ScratchMiB, 10),
				"--poll-wait", "5s", "--log-level", "debug")
			cmd.Env = cleanEnv()
			cmd.Stdout, cmd.Stderr = logf, logf
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			b, _ := json.Marshal(localMachine{Pool: req.Pool.Name, Name: n.Name, PID: cmd.Process.Pid})
			if err := os.WriteFile(filepath.Join(machines, n.Name+".json"), b, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			out = append(out, map[string]string{"name": n.Name, "provider_id": "pid-" + strconv.Itoa(cmd.Process.Pid)})
		}
	case "delete":
		for _, n := range req.Delete {
			if m, ok := readMachine(filepath.Join(machines, n.Name+".json")); ok {
				syscall.Kill(m.PID, syscall.SIGTERM)
			}
			os.Remove(filepath.Join(machines, n.Name+".json"))
		}
	case "list":
		files, _ := filepath.Glob(filepath.Join(machines, "*.json"))
		for _, f := range files {
			if m, ok := readMachine(f); ok && m.Pool == req.Pool.Name && alive(m.PID) {
				out = append(out, map[string]string{"name": m.Name, "provider_id": "pid-" + strconv.Itoa(m.PID), "state": "running"})
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "local cloud: unknown action", req.Action)
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"nodes": out})
	return 0
}

func readMachine(path string) (localMachine, bool) {
	var m localMachine
	b, err := os.ReadFile(path)
	return m, err == nil && json.Unmarshal(b, &m) == nil
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// localCloud is the local cloud of a test, cleaned up with it.
func localCloud(c *cluster) string {
	dir := filepath.Join(c.dir, "cloud")
	c.t.Cleanup(func() {
		files, _ := filepath.Glob(filepath.Join(dir, "machines", "*.json"))
		for _, f := range files {
			if m, ok := readMachine(f); ok {
				syscall.Kill(m.PID, syscall.SIGKILL)
			}
		}
	})
	return dir
}

// From no nodes at all, a job brings up a node through the exec provider (a real
// agent process that joins with the token it was given); the job runs there; once
// the node has been idle past the timeout it is scaled down and its agent stopped.
func TestE2EPoolScalesUpFromZeroAndDownAfterIdle(t *testing.T) {
	c := newCluster(t, func(c *cluster) { c.autoscale = true })
	cloud := localCloud(c)
	ctx := audit.WithActor(c.ctx, audit.System())
	p, _, err := pools.Apply(ctx, c.st, c.audit, pools.Spec{Name: "e2e-l4", Provider: pools.ProviderExec, CapacityType: models.CapacityOnDemand, MaxNodes: 2,
		Template: pools.Template{GPUModel: "L4-24GB", GPUs: 1, CPUMilli: 4000, MemoryMiB: 8192, ScratchMiB: 10000},
		ProviderConfig: map[string]any{"command": []any{"/usr/bin/env", e2eProviderEnv + "=" + cloud, e2eBinaryEnv + "=" + binary, os.Args[0]},
			"timeout_sec": 30, "backoff_ms": 200}})
	if err != nil {
		t.Fatal(err)
	}
	j := c.submit("hello", `echo "hello from $GANTRY_JOB_ID"`)
	c.waitState(j.ID, models.JobSucceeded)
	_, node := c.allocation(j.ID, 1)
	if !strings.HasPrefix(node, "e2e-l4-") {
		t.Fatalf("the job ran on %s, not a node of the pool", node)
	}
	if out := c.output(j.ID, 1, "stdout"); out != fmt.Sprintf("hello from %d\n", j.ID) {
		t.Fatalf("output %q", out)
	}
	m, ok := readMachine(filepath.Join(cloud, "machines", node+".json"))
	if !ok || !alive(m.PID) {
		t.Fatalf("no live agent process for %s", node)
	}
	// The node goes down as its machine is deleted; the deletion's event follows.
	var kinds []string
	c.waitFor("the idle node to be scaled down and its machine deleted", func() bool {
		n, err := c.st.NodeByName(c.ctx, node)
		evs, _ := c.st.PoolEvents(c.ctx, store.PoolEventFilter{PoolID: p.ID})
		kinds = kinds[:0]
		for i := len(evs) - 1; i >= 0; i-- {
			kinds = append(kinds, evs[i].Kind)
		}
		return err == nil && n.State == models.NodeDown && !alive(m.PID) && slices.Contains(kinds, models.PoolDeleted)
	})
	insts, err := c.st.PoolInstances(c.ctx, p.ID)
	if err != nil || len(insts) != 1 || insts[0].State != models.InstanceDeleted {
		t.Fatalf("instances %+v, %v", insts, err)
	}
	if strings.Join(kinds, ",") != "scale-up,scale-down,deleted" {
		t.Fatalf("pool events %v", kinds)
	}
}

// The spot node's metadata service announces a preemption (GCP's format, served
// locally): the running job is asked to checkpoint within the notice, stops, is
// requeued and resumes on the other node from its checkpoint, without spending a retry.
func TestE2ESpotNoticeMovesAJobToAnotherNode(t *testing.T) {
	c := newCluster(t)
	var preempted atomic.Bool
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/computeMetadata/v1/instance/preempted" || r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Write([]byte(map[bool]string{false: "FALSE", true: "TRUE"}[preempted.Load()]))
	}))
	defer meta.Close()
	shared := filepath.Join(c.dir, "shared-checkpoints")
	c.startAgent("spot-1", "1xL4-24GB", "--checkpoint-dir", shared,
		"--interruption-url", meta.URL+"/computeMetadata/v1/instance/preempted", "--interruption-poll", "100ms")
	j := c.submit("train", `ck="$GANTRY_CHECKPOINT_DIR/step"; i=0; [ -f "$ck" ] && i=$(cat "$ck")
echo "resuming at $i on $(hostname)"
trap 'echo "$i" > "$ck"; echo "checkpointed at $i (request: $(grep -c reason.:.reclaim "$GANTRY_CHECKPOINT_REQUEST_FILE"))"; exit 0' USR1
while [ $i -lt 60 ]; do
  [ "$GANTRY_ATTEMPT" = 1 ] && [ $i -ge 30 ] || i=$((i+1))
  sleep 0.05
done
echo "done at $i"`)
	c.waitState(j.ID, models.JobRunning)
	// The first attempt waits at step 30 for the reclaim, however long a loaded machine
	// takes to bring up the other node and deliver the notice.
	c.waitFor("the job to make progress", func() bool { return strings.Contains(c.output(j.ID, 1, "stdout"), "resuming at 0") })
	c.startAgent("od-1", "1xL4-24GB", "--checkpoint-dir", shared)
	preempted.Store(true)

	done := c.waitState(j.ID, models.JobSucceeded)
	if done.Attempt != 2 || done.Retries != 0 {
		t.Fatalf("job = attempt %d retries %d, want a second attempt without a retry spent", done.Attempt, done.Retries)
	}
	if _, where := c.allocation(j.ID, 1); where != "spot-1" {
		t.Fatalf("attempt 1 ran on %s", where)
	}
	if _, where := c.allocation(j.ID, 2); where != "od-1" {
		t.Fatalf("attempt 2 ran on %s, want the other node", where)
	}
	first := c.output(j.ID, 1, "stdout")
	m := regexp.MustCompile(`checkpointed at (\d+) \(request: 1\)`).FindStringSubmatch(first)
	if m == nil || m[1] == "0" {
		t.Fatalf("attempt 1 did not checkpoint on the reclaim request: %q", first)
	}
	if second := c.output(j.ID, 2, "stdout"); !strings.HasPrefix(second, "resuming at "+m[1]+" ") || !strings.HasSuffix(second, "done at 60\n") {
		t.Fatalf("attempt 2 did not resume from step %s: %q", m[1], second)
	}
	n, err := c.st.NodeByName(c.ctx, "spot-1")
	if err != nil || n.State != models.NodeDraining || !strings.Contains(n.StateReason, "GCP instance preempted") {
		t.Fatalf("spot node %+v, %v", n, err)
	}
	evs, _ := c.st.JobEvents(c.ctx, j.ID)
	reclaimed := false
	for _, e := range evs {
		reclaimed = reclaimed || e.Reason == "reclaimed"
	}
	if !reclaimed {
		t.Fatalf("no reclaimed event: %+v", evs)
	}
}
