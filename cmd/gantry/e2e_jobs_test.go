package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// Jobs run as real processes on a real agent: one succeeds with its output, one
// fails with its exit code, one is cancelled while it runs.
func TestE2ERunFailAndCancel(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "2xA100-80GB")
	devs, _ := c.st.DevicesOfNode(c.ctx, mustNode(t, c, "gpu-1").ID)

	ok := c.submit("hello", `echo "hello from job $GANTRY_JOB_ID attempt $GANTRY_ATTEMPT"; echo "gpus $CUDA_VISIBLE_DEVICES"; echo "to stderr" >&2; echo "ckpt $GANTRY_CHECKPOINT_DIR" | grep -c checkpoints`)
	fail := c.submit("fail", `echo failing; exit 7`)
	slow := c.submit("slow", `trap 'echo got TERM; exit 143' TERM; echo started; while :; do sleep 0.05; done`)

	done := c.waitState(ok.ID, models.JobSucceeded)
	if done.ExitCode == nil || *done.ExitCode != 0 || done.Attempt != 1 {
		t.Fatalf("succeeded job = exit %v attempt %d", done.ExitCode, done.Attempt)
	}
	out := c.output(ok.ID, 1, "stdout")
	if !strings.Contains(out, "hello from job "+itoa(ok.ID)+" attempt 1\n") || !strings.Contains(out, "\n1\n") {
		t.Errorf("stdout = %q", out)
	}
	a, node := c.allocation(ok.ID, 1)
	var gpu string
	for _, d := range devs {
		if strings.Contains(a.Devices, d.UUID) {
			gpu = d.UUID
		}
	}
	if node != "gpu-1" || gpu == "" || !strings.Contains(out, "gpus "+gpu+"\n") {
		t.Errorf("job saw %q; allocation %s on %s", out, a.Devices, node)
	}
	if got := c.output(ok.ID, 1, "stderr"); got != "to stderr\n" {
		t.Errorf("stderr = %q", got)
	}

	failed := c.waitState(fail.ID, models.JobFailed)
	if failed.ExitCode == nil || *failed.ExitCode != 7 || !strings.Contains(c.output(fail.ID, 1, "stdout"), "failing") {
		t.Fatalf("failed job = exit %v, output %q", failed.ExitCode, c.output(fail.ID, 1, "stdout"))
	}

	c.waitState(slow.ID, models.JobRunning)
	c.waitFor("the slow job's output", func() bool { return c.output(slow.ID, 1, "stdout") == "started\n" })
	if _, err := c.disp.CancelJob(c.ctx, slow.ID, "user:ada", "changed my mind"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the cancelled attempt to end", func() bool {
		a, _ := c.allocation(slow.ID, 1)
		return a.State == models.AllocEnded
	})
	a, _ = c.allocation(slow.ID, 1)
	if a.ExitCode == nil || *a.ExitCode != 143 || a.StopReason != agentapi.StopCancel || c.job(slow.ID).State != models.JobCancelled {
		t.Fatalf("cancelled attempt = exit %v reason %q", a.ExitCode, a.StopReason)
	}
	c.waitFor("the cancelled job's last words", func() bool { return strings.Contains(c.output(slow.ID, 1, "stdout"), "got TERM") })
}

// The agent protocol refuses what it cannot trust, and changes nothing.
func TestE2EAgentBadInput(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "1xL4-24GB")
	j := c.submit("sleeper", `sleep 30`)
	c.waitState(j.ID, models.JobRunning)
	cred := readCredential(t, filepath.Join(c.dir, "agents", "gpu-1"))
	post := func(path, auth, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, c.url+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	exit := `{"job_id": ` + itoa(j.ID) + `, "attempt": 1, "replica": 0, "event": "exited", "exit_code": 0}`
	for _, tc := range []struct {
		name, path, auth, body string
		status                 int
		want                   string
	}{
		{"no credential", agentapi.PathReport, "", exit, 401, `"code":"unauthorized"`},
		{"wrong credential", agentapi.PathReport, "gnc_forged", exit, 401, `"code":"unauthorized"`},
		{"bad join token", agentapi.PathJoin, "", `{"join_token": "gjt_nope", "name": "intruder", "runtime": "process"}`, 401, "unknown join token"},
		{"not JSON", agentapi.PathReport, cred, `{"job_id": `, 400, `"field":"body"`},
		{"bad event", agentapi.PathReport, cred, strings.Replace(exit, "exited", "vanished", 1), 400, `"field":"event"`},
		{"exit code out of range", agentapi.PathReport, cred, strings.Replace(exit, `"exit_code": 0`, `"exit_code": 999`, 1), 400, `"field":"exit_code"`},
		{"stale attempt", agentapi.PathReport, cred, strings.Replace(exit, `"attempt": 1`, `"attempt": 2`, 1), 409, `"code":"stale_attempt"`},
		{"log past the end", agentapi.PathLogs, cred, `{"job_id": ` + itoa(j.ID) + `, "attempt": 1, "stream": "stdout", "offset": 1000, "data": "eA=="}`, 409, `"next_offset":0`},
	} {
		status, body := post(tc.path, tc.auth, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.name, status, body, tc.status, tc.want)
		}
	}
	if got := c.job(j.ID); got.State != models.JobRunning {
		t.Fatalf("refused requests changed the job: %s", got.State)
	}
	evs, err := c.st.AuditEventsAfter(c.ctx, store.AuditFilter{Action: "agent.refused"}, 0, 100)
	if err != nil || len(evs) < 2 || evs[0].SourceIP != "127.0.0.1" {
		t.Fatalf("refused credentials audited = %+v, %v", evs, err)
	}
}

// kill -9 of an agent mid-job: its node is lost, the job runs again on another
// node, and the two attempts never run at the same time.
func TestE2EAgentKilledJobMovesWithoutDoubleRun(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-a", "1xL4-24GB")
	c.startAgent("gpu-b", "1xL4-24GB")
	marks := filepath.Join(c.dir, "marks")
	j := c.submit("mover", marker(marks, 100, 20), func(s *jobs.Spec) { s.MaxRetries = 1 })
	c.waitState(j.ID, models.JobRunning)
	c.waitFor("the first attempt to make progress", func() bool { return strings.Contains(c.output(j.ID, 1, "stdout"), "tick 3\n") })
	_, first := c.allocation(j.ID, 1)
	c.agents[first].kill()

	done := c.waitState(j.ID, models.JobSucceeded)
	a1, _ := c.allocation(j.ID, 1)
	_, second := c.allocation(j.ID, 2)
	if done.Attempt != 2 || done.Retries != 1 || second == first || a1.StopReason != "node-lost" {
		t.Fatalf("job = attempt %d retries %d; attempt 1 on %s ended %q, attempt 2 on %s", done.Attempt, done.Retries, first, a1.StopReason, second)
	}
	if n := mustNode(t, c, first); n.State != models.NodeLost {
		t.Errorf("killed agent's node is %s", n.State)
	}
	s := spans(t, marks)
	if s[1][1] >= s[2][0] {
		t.Fatalf("attempt 1 ran until %d, attempt 2 started at %d: the job ran twice at once", s[1][1], s[2][0])
	}
	if got := c.output(j.ID, 2, "stdout"); got != ticks(20) {
		t.Errorf("attempt 2 output is incomplete or duplicated: %q", tail(got, 200))
	}
}

// An agent frozen past the timeout (SIGSTOP, as a network cut) is fenced: its job
// is stopped by its supervisor and runs elsewhere; when the agent thaws, its
// report of the old attempt is refused and the job's record stands.
func TestE2EFrozenAgentIsFenced(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-a", "1xL4-24GB")
	c.startAgent("gpu-b", "1xL4-24GB")
	marks := filepath.Join(c.dir, "marks")
	j := c.submit("frozen", marker(marks, 120, 20), func(s *jobs.Spec) { s.MaxRetries = 1 })
	c.waitState(j.ID, models.JobRunning)
	_, first := c.allocation(j.ID, 1)
	frozen := c.agents[first]
	frozen.signal(syscall.SIGSTOP)
	c.waitFor("the frozen node to be lost", func() bool { return mustNode(t, c, first).State == models.NodeLost })
	c.waitFor("attempt 2 to run", func() bool { j := c.job(j.ID); return j.Attempt == 2 && j.State == models.JobRunning })
	frozen.signal(syscall.SIGCONT)
	c.waitFor("the thawed node to be ready", func() bool { return mustNode(t, c, first).State == models.NodeReady })
	c.waitFor("the thawed agent to drop its stale attempt", func() bool { return strings.Contains(frozen.logText(), "stale=true") })

	c.waitState(j.ID, models.JobSucceeded)
	a1, _ := c.allocation(j.ID, 1)
	if a1.StopReason != "node-lost" || a1.ExitCode != nil {
		t.Fatalf("the stale report overwrote attempt 1: ended %q exit %v", a1.StopReason, a1.ExitCode)
	}
	s := spans(t, marks)
	if s[1][1] >= s[2][0] {
		t.Fatalf("attempt 1 ran until %d, attempt 2 started at %d: the job ran twice at once", s[1][1], s[2][0])
	}
	actions := auditActions(t, c)
	if !slices.Contains(actions, "node.lost") || !slices.Contains(actions, "node.recovered") {
		t.Errorf("audit = %v", actions)
	}
}

// kill -9 of the server mid-job: the job keeps running, ends while the server is
// down, and after the restart it is recorded as succeeded with all its output.
func TestE2EServerKilledJobFinishes(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "1xL4-24GB")
	j := c.submit("survivor", `i=0; while [ $i -lt 40 ]; do echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`)
	c.waitState(j.ID, models.JobRunning)
	c.waitFor("some output", func() bool { return strings.Contains(c.output(j.ID, 1, "stdout"), "tick 2\n") })
	c.server.kill()
	c.waitFor("the job to end while the server is down", func() bool {
		st, _ := filepath.Glob(filepath.Join(c.dir, "agents", "gpu-1", "attempts", "*", "exit.json"))
		return len(st) == 1
	})
	time.Sleep(time.Second) // the agent retries against a server that is not there
	c.startServer()
	done := c.waitState(j.ID, models.JobSucceeded)
	if done.Attempt != 1 || done.Retries != 0 {
		t.Fatalf("job = attempt %d retries %d, want the first attempt to finish", done.Attempt, done.Retries)
	}
	if got := c.output(j.ID, 1, "stdout"); got != ticks(40) {
		t.Fatalf("output after the restart is incomplete or duplicated: %q", got)
	}
}

// kill -9 of an agent that comes back within the timeout: the job never stopped,
// the new agent re-attaches and reports it.
func TestE2EAgentRestartReattaches(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "1xL4-24GB")
	j := c.submit("patient", `i=0; while [ $i -lt 30 ]; do echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`)
	c.waitState(j.ID, models.JobRunning)
	c.waitFor("some output", func() bool { return strings.Contains(c.output(j.ID, 1, "stdout"), "tick 1\n") })
	c.agents["gpu-1"].kill()
	restarted := c.startAgent("gpu-1", "1xL4-24GB")
	done := c.waitState(j.ID, models.JobSucceeded)
	if done.Attempt != 1 {
		t.Fatalf("job ran %d attempts, want 1", done.Attempt)
	}
	if got := c.output(j.ID, 1, "stdout"); got != ticks(30) {
		t.Fatalf("output = %q", got)
	}
	if !strings.Contains(restarted.logText(), "re-attached to an attempt") {
		t.Error("the restarted agent did not say it re-attached")
	}
}

func mustNode(t *testing.T, c *cluster, name string) *models.Node {
	t.Helper()
	n, err := c.st.NodeByName(c.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readCredential(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var id struct{ Credential string }
	if err := jsonUnmarshal(b, &id); err != nil {
		t.Fatal(err)
	}
	return id.Credential
}

func auditActions(t *testing.T, c *cluster) []string {
	t.Helper()
	evs, err := c.st.AuditEventsAfter(c.ctx, store.AuditFilter{}, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Action)
	}
	return out
}

// A secret variable reaches the job's process, but neither its stored output (masked,
// also where the agent ships it in two chunks), the server's and the agent's logs, nor
// the lease file the agent keeps beside the attempt, which other users of the node may read.
func TestE2ESecretEnvReachesOnlyTheJob(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "1xA100-80GB")
	const secret = "hf_e2e-secret-5521"
	// It prints the value in two writes a second apart, which the agent ships apart (it
	// ships every 200 ms); it runs until cancelled: the agent removes an ended attempt's files.
	j := c.submit("secret", `echo "length ${#HF_TOKEN}"; echo "token $HF_TOKEN"; printf 'split %s' "$(printf %s "$HF_TOKEN" | head -c 7)"; sleep 1; `+
		`printf '%s\n' "$HF_TOKEN" | tail -c +8; while :; do sleep 0.05; done`, func(s *jobs.Spec) {
		s.Env = map[string]jobs.EnvVar{"HF_TOKEN": jobs.Secret(secret)}
	})
	stars := strings.Repeat("*", len(secret))
	want := fmt.Sprintf("length %d\ntoken %s\nsplit %s\n", len(secret), stars, stars)
	c.waitFor("the job's output, masked", func() bool { return c.output(j.ID, 1, "stdout") == want })
	leases, _ := filepath.Glob(filepath.Join(c.dir, "agents", "gpu-1", "attempts", "*", "lease.json"))
	if len(leases) != 1 {
		t.Fatalf("lease files %v", leases)
	}
	b, err := os.ReadFile(leases[0])
	if err != nil || strings.Contains(string(b), secret) || !strings.Contains(string(b), `"job_id":`+itoa(j.ID)) {
		t.Errorf("lease file holds the secret, or is not the job's: %s (%v)", b, err)
	}
	if _, err := c.disp.CancelJob(c.ctx, j.ID, "user:ada", "done"); err != nil {
		t.Fatal(err)
	}
	c.waitState(j.ID, models.JobCancelled)
	for what, log := range map[string]string{"server": c.server.logText(), "agent": c.agents["gpu-1"].logText()} {
		if strings.Contains(log, secret) {
			t.Errorf("the %s's log holds the secret value", what)
		}
	}
}

// gantry job logs -f goes on across a kill -9 of the server: it asks again until the
// server answers, after the cursor of what it printed, so the job's whole output comes
// out once, in order, and it ends when the job does.
func TestE2ELogsFollowRideOutAServerRestart(t *testing.T) {
	c := newCluster(t)
	c.user.IsAdmin = true
	if err := c.st.UpdateUser(c.ctx, c.user); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := gantry(t, nil, "admin", "token", "create", "--user", "ada", "--name", "e2e", "--scope", "read", "--data-dir", filepath.Join(c.dir, "server"))
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	c.startAgent("gpu-1", "1xL4-24GB")
	j := c.submit("chatty", `i=0; while [ $i -lt 60 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done; echo finished`)

	var stdout, errOut syncBuffer
	follower := exec.Command(binary, "job", "logs", "-f", itoa(j.ID))
	follower.Env = append(cleanEnv(), "GANTRY_SERVER="+c.url, "GANTRY_TOKEN="+token, "HOME="+t.TempDir())
	follower.Stdout, follower.Stderr = &stdout, &errOut
	if err := follower.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- follower.Wait() }()
	defer follower.Process.Kill()

	c.waitFor("the follower to print some output", func() bool { return strings.Contains(stdout.String(), "tick 5\n") })
	c.server.kill()
	time.Sleep(time.Second) // the follower asks a server that is not there
	c.startServer()
	c.waitState(j.ID, models.JobSucceeded)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the follower failed: %v: %s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the follower did not end with the job; it printed %q and said %q", stdout.String(), errOut.String())
	}
	if got := stdout.String(); got != ticks(60) {
		t.Errorf("the follower printed %q, want the job's whole output once", got)
	}
	if said := errOut.String(); !strings.Contains(said, "asking again until it answers") || !strings.Contains(said, "The server answers again") {
		t.Errorf("the follower said %q about the restart", said)
	}
}

// syncBuffer is a buffer that a process writes into while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
