package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// api calls the JSON API with a Bearer token.
type api struct {
	t     *testing.T
	url   string
	token string
}

func (a api) do(method, path, body string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

type apiJob struct {
	ID          int64
	State       string
	Attempt     int
	ExitCode    *int   `json:"exit_code"`
	PendingWhy  string `json:"pending_reason"`
	Allocations []struct {
		Node string
		GPUs []struct {
			UUID  string
			Milli int64
		}
	}
}

func (a api) submit(script string) apiJob {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"project": "default", "name": "e2e", "command": []string{"/bin/sh", "-c", script}, "resources": map[string]int{"gpus": 1}})
	status, out := a.do(http.MethodPost, "/api/v1/jobs", string(body))
	var j apiJob
	if status != http.StatusCreated || json.Unmarshal([]byte(out), &j) != nil {
		a.t.Fatalf("submit = %d %s", status, out)
	}
	return j
}

func (a api) job(id int64) apiJob {
	a.t.Helper()
	status, out := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d", id), "")
	var j apiJob
	if status != http.StatusOK || json.Unmarshal([]byte(out), &j) != nil {
		a.t.Fatalf("get job %d = %d %s", id, status, out)
	}
	return j
}

func (a api) wait(id int64, state string) apiJob {
	a.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := a.job(id)
		if j.State == state {
			return j
		}
		if j.State != state && (j.State == "succeeded" || j.State == "failed" || j.State == "cancelled") || time.Now().After(deadline) {
			_, detail := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d", id), "")
			a.t.Fatalf("job %d is %s, want %s: %s", id, j.State, state, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (a api) logs(id int64) string {
	a.t.Helper()
	status, out := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d/logs", id), "")
	if status != http.StatusOK {
		a.t.Fatalf("logs of job %d = %d %s", id, status, out)
	}
	return out
}

// apiToken creates an API token for the bootstrap admin with the CLI, on the SQLite
// database in dir.
func apiToken(t *testing.T, dir string) string {
	t.Helper()
	return apiTokenOn(t, "--data-dir", dir)
}

// apiTokenOn creates an API token for the bootstrap admin with the CLI, on the
// database the flags name.
func apiTokenOn(t *testing.T, dbFlags ...string) string {
	t.Helper()
	out, stderr, code := gantry(t, nil, append([]string{"admin", "token", "create", "--user", "admin", "--name", "e2e"}, dbFlags...)...)
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// The first command gives a working system: `gantry serve` runs jobs on its own
// local agent (simulated GPUs here), through the API, and a restart of the server
// (and with it the agent) loses nothing of a running job.
func TestServeRunsJobsOnItsLocalAgent(t *testing.T) {
	dir := t.TempDir()
	url, stop := serveFor(t, dir, "--heartbeat-interval", "300ms", "--node-timeout", "5s")
	a := api{t: t, url: url, token: apiToken(t, dir)}
	hello := a.submit(`echo "hi from $GANTRY_JOB_ID"`)
	done := a.wait(hello.ID, "succeeded")
	if done.ExitCode == nil || *done.ExitCode != 0 || len(done.Allocations) != 1 || !strings.HasSuffix(done.Allocations[0].Node, "-local") {
		t.Fatalf("job = %+v", done)
	}
	if g := done.Allocations[0].GPUs; len(g) != 1 || g[0].UUID == "" || g[0].Milli != 1000 {
		t.Errorf("the job's one GPU = %+v", g)
	}
	if got := a.logs(hello.ID); got != fmt.Sprintf("hi from %d\n", hello.ID) {
		t.Fatalf("logs = %q", got)
	}

	long := a.submit(`i=0; while [ $i -lt 40 ]; do echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`)
	a.wait(long.ID, "running")
	stop()
	url, _ = serveFor(t, dir, "--heartbeat-interval", "300ms", "--node-timeout", "5s")
	a.url = url
	got := a.wait(long.ID, "succeeded")
	if got.Attempt != 1 {
		t.Fatalf("the job ran %d attempts across the restart, want 1", got.Attempt)
	}
	if out := a.logs(long.ID); out != ticks(40) {
		t.Fatalf("logs after the restart = %q", out)
	}
}

// With --no-local-agent the server runs no node: a job waits and says why.
func TestServeWithoutLocalAgent(t *testing.T) {
	dir := t.TempDir()
	url, _ := serveFor(t, dir, "--no-local-agent")
	a := api{t: t, url: url, token: apiToken(t, dir)}
	j := a.submit("true")
	deadline := time.Now().Add(30 * time.Second)
	for a.job(j.ID).PendingWhy == "" {
		if time.Now().After(deadline) {
			t.Fatal("the job waits without a reason")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := a.job(j.ID); got.State != "queued" {
		t.Fatalf("job without nodes = %+v", got)
	}
}

func TestJoinTokenCLI(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := gantry(t, nil, "join-token", "create", "--data-dir", dir, "--name", "rack-1", "--ttl", "2h")
	if code != 0 || !strings.HasPrefix(out, "gjt_") || !strings.Contains(stderr, "gantry agent --server URL --join-token gjt_") {
		t.Fatalf("create = %d %q %q", code, out, stderr)
	}
	out, _, _ = gantry(t, nil, "join-token", "ls", "--data-dir", dir)
	if !strings.Contains(out, "rack-1") || !strings.Contains(out, "valid") {
		t.Fatalf("ls = %q", out)
	}
	if _, _, code := gantry(t, nil, "join-token", "revoke", "rack-1", "--data-dir", dir); code != 0 {
		t.Fatalf("revoke: exit %d", code)
	}
	if out, _, _ = gantry(t, nil, "join-token", "ls", "--data-dir", dir); !strings.Contains(out, "revoked") {
		t.Fatalf("ls after revoke = %q", out)
	}
	_, stderr, code = gantry(t, nil, "join-token", "create", "--data-dir", dir, "--name", "x", "--ttl", "-1h")
	if code != 2 || !strings.Contains(stderr, "--ttl") {
		t.Fatalf("negative ttl = %d %q", code, stderr)
	}
	_, stderr, code = gantry(t, nil, "join-token", "revoke", "nope", "--data-dir", dir)
	if code != 1 || !strings.Contains(stderr, `no valid join token is called "nope"`) {
		t.Fatalf("revoke unknown = %d %q", code, stderr)
	}
}

// A job that writes more than --job-log-limit-mib keeps the first MiB of its output,
// runs to its end, and its timeline says what was not kept.
func TestServeKeepsJobLogsUpToTheLimit(t *testing.T) {
	dir := t.TempDir()
	url, _ := serveFor(t, dir, "--heartbeat-interval", "300ms", "--job-log-limit-mib", "1")
	a := api{t: t, url: url, token: apiToken(t, dir)}
	j := a.submit(`head -c 3000000 /dev/zero | tr -c x x; echo; echo done >&2`)
	a.wait(j.ID, "succeeded")
	for stream, want := range map[string]string{"stdout": strings.Repeat("x", 1<<20), "stderr": "done\n"} {
		if status, got := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d/logs?stream=%s", j.ID, stream), ""); status != http.StatusOK || got != want {
			t.Errorf("%s: %d, %d bytes (%.20q…); want %d bytes", stream, status, len(got), got, len(want))
		}
	}
	_, out := a.do(http.MethodGet, fmt.Sprintf("/api/v1/jobs/%d", j.ID), "")
	if !strings.Contains(out, "stdout reached 1 MiB, the most kept of one stream: what it writes after is not kept") {
		t.Errorf("the job does not say its output was cut: %s", out)
	}
}
