package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// cluster is a control plane process (the test binary as e2e server) and real
// `gantry agent` processes, over one SQLite database that the test reads too.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	addr   string
	url    string
	st     *store.Store
	jobs   *jobs.Service
	disp   *dispatch.Service // the test's own handle, for cancelling through the database
	audit  *audit.Log
	user   *models.User
	server *proc
	agents map[string]*proc
	// autoscale makes the control plane run the pools autoscaler too.
	autoscale bool
	// nodeTimeout, when set, replaces e2eTimings' NodeTimeout in the control plane.
	nodeTimeout time.Duration
}

// proc is a process the test started, with its log in a file.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

type noKick struct{}

func (noKick) Kick() {}

// newCluster starts a control plane; options change the cluster before it starts.
func newCluster(t *testing.T, options ...func(*cluster)) *cluster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &cluster{t: t, ctx: context.Background(), dir: t.TempDir(), addr: addr, url: "http://" + addr, agents: map[string]*proc{}}
	c.st, err = store.Open(c.ctx, store.Config{DataDir: filepath.Join(c.dir, "server")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.Migrate(c.ctx); err != nil {
		t.Fatal(err)
	}
	c.audit = audit.New(c.st, time.Now)
	c.jobs = jobs.New(c.st, c.audit, noKick{}, nil)
	sched, err := productionScheduler(c.ctx, c.st)
	if err != nil {
		t.Fatal(err)
	}
	c.disp, err = dispatch.New(dispatch.Deps{
		Store: c.st, Scheduler: sched, Audit: c.audit, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, e2eTimings)
	if err != nil {
		t.Fatal(err)
	}
	c.user = &models.User{Username: "ada"}
	team := &models.Team{Name: "vision"}
	if err := c.st.CreateUser(c.ctx, c.user); err != nil {
		t.Fatal(err)
	}
	if err := c.st.CreateTeam(c.ctx, team); err != nil {
		t.Fatal(err)
	}
	if err := c.st.CreateProject(c.ctx, &models.Project{TeamID: team.ID, Name: "default"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range options {
		o(c)
	}
	t.Cleanup(c.stop)
	c.startServer()
	return c
}

// stop kills what the test started, the jobs' supervisors included, then closes the store.
func (c *cluster) stop() {
	for _, a := range c.agents {
		a.kill()
	}
	if c.server != nil {
		c.server.kill()
	}
	pids, _ := filepath.Glob(filepath.Join(c.dir, "agents", "*", "attempts", "*", "*pid"))
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			if filepath.Base(p) == "pid" {
				syscall.Kill(-pid, syscall.SIGKILL)
			} else {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	c.st.Close()
	for name, a := range c.agents {
		noSecretsLogged(c.t, "agent "+name, a.logText())
	}
	if c.server != nil {
		noSecretsLogged(c.t, "server", c.server.logText())
	}
	if c.t.Failed() {
		for name, a := range c.agents {
			c.t.Logf("agent %s log:\n%s", name, tail(a.logText(), 4000))
		}
		if c.server != nil {
			c.t.Logf("server log:\n%s", tail(c.server.logText(), 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// start runs cmd with its output in logPath and returns once it printed ready
// on stdout (or at once when ready is empty).
func (c *cluster) start(cmd *exec.Cmd, logPath, ready string) *proc {
	c.t.Helper()
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: logPath, done: make(chan struct{})}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	if ready == "" {
		return p
	}
	select {
	case l := <-lines:
		if l != ready {
			c.t.Fatalf("%s printed %q, want %q", cmd.Path, l, ready)
		}
	case <-p.done:
		c.t.Fatalf("%s exited: %s", cmd.Path, p.logText())
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s did not start: %s", cmd.Path, p.logText())
	}
	return p
}

func (c *cluster) startServer() {
	c.t.Helper()
	cfg, _ := json.Marshal(e2eServerConfig{DataDir: filepath.Join(c.dir, "server"), Addr: c.addr, Autoscale: c.autoscale, NodeTimeout: c.nodeTimeout})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(cleanEnv(), e2eServerEnv+"="+string(cfg))
	c.server = c.start(cmd, filepath.Join(c.dir, "server.log"), "serving")
}

// startAgent runs `gantry agent` as node name with simulated GPUs and extra flags,
// joining the first time with a fresh join token.
func (c *cluster) startAgent(name, gpus string, extra ...string) *proc {
	c.t.Helper()
	return c.startAgentEnv(name, gpus, nil, extra...)
}

// startAgentEnv starts an agent as startAgent does, with env added to its environment.
func (c *cluster) startAgentEnv(name, gpus string, env []string, extra ...string) *proc {
	c.t.Helper()
	dataDir := filepath.Join(c.dir, "agents", name)
	args := []string{"agent", "--server", c.url, "--data-dir", dataDir, "--name", name, "--simulate-gpus", gpus,
		"--poll-wait", "5s", "--cpu-milli", "4000", "--memory-mib", "8192", "--scratch-mib", "10000", "--log-level", "debug"}
	args = append(args, extra...)
	if _, err := os.Stat(filepath.Join(dataDir, "node.json")); err != nil {
		token, _, err := dispatch.CreateJoinToken(c.ctx, c.st, c.audit, time.Now(), dispatch.JoinTokenSpec{Name: "e2e-" + name, TTL: time.Hour})
		if err != nil {
			c.t.Fatal(err)
		}
		args = append(args, "--join-token", token)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		c.t.Fatal(err)
	}
	p := c.start(cmd, filepath.Join(c.dir, "agent-"+name+".log"), "")
	c.agents[name] = p
	c.waitFor("node "+name+" to be ready", func() bool {
		n, err := c.st.NodeByName(c.ctx, name)
		return err == nil && n.State == models.NodeReady && n.LastHeartbeatAt != nil && time.Since(*n.LastHeartbeatAt) < time.Second
	})
	return p
}

// waitFor polls cond; the limit only stops a broken test.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submit queues a shell script as a job of one GPU.
func (c *cluster) submit(name, script string, mutate ...func(*jobs.Spec)) *models.Job {
	c.t.Helper()
	spec := jobs.Spec{Project: "default", Name: name, Command: []string{"/bin/sh", "-c", script}, Resources: jobs.Resources{GPUs: 1, CPUMilli: 500, MemoryMiB: 256}}
	for _, m := range mutate {
		m(&spec)
	}
	j, err := c.jobs.Submit(c.ctx, c.user, spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return j
}

func (c *cluster) job(id int64) *models.Job {
	c.t.Helper()
	j, err := c.st.JobByID(c.ctx, id)
	if err != nil {
		c.t.Fatal(err)
	}
	return j
}

func (c *cluster) waitState(id int64, state string) *models.Job {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("job %d to be %s", id, state), func() bool {
		j := c.job(id)
		if models.IsTerminal(j.State) && j.State != state {
			evs, _ := c.st.JobEvents(c.ctx, id)
			c.t.Fatalf("job %d ended %s, want %s; events %+v", id, j.State, state, evs)
		}
		return j.State == state
	})
	return c.job(id)
}

// output is what the server holds of one stream of an attempt.
func (c *cluster) output(id int64, attempt int, stream string) string {
	c.t.Helper()
	chunks, err := c.st.LogChunks(c.ctx, store.LogFilter{JobID: id, Attempt: attempt, Stream: stream, Limit: 100000})
	if err != nil {
		c.t.Fatal(err)
	}
	var b strings.Builder
	for _, ch := range chunks {
		b.Write(ch.Data)
	}
	return b.String()
}

// allocation returns where attempt of job ran.
func (c *cluster) allocation(id int64, attempt int) (models.Allocation, string) {
	c.t.Helper()
	a, err := c.st.AllocationByAttempt(c.ctx, id, attempt, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	n, err := c.st.NodeByID(c.ctx, a.NodeID)
	if err != nil {
		c.t.Fatal(err)
	}
	return *a, n.Name
}

// marker is a job script that appends "<attempt> <unix ns>" to file every 50 ms,
// first times on attempt 1 and later times on the others, then exits 0; it shows
// when each attempt ran.
func marker(file string, first, later int) string {
	return fmt.Sprintf(`n=%d; [ "$GANTRY_ATTEMPT" = 1 ] || n=%d; i=0; while [ $i -lt $n ]; do echo "$GANTRY_ATTEMPT $(date +%%s%%N)" >> %s; echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`, first, later, file)
}

// spans reads a marker file: the first and last time each attempt wrote.
func spans(t *testing.T, file string) map[int][2]int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var attempt int
		var at int64
		if _, err := fmt.Sscanf(line, "%d %d", &attempt, &at); err != nil {
			t.Fatalf("marker line %q: %v", line, err)
		}
		s, ok := out[attempt]
		if !ok {
			s = [2]int64{at, at}
		}
		s[0], s[1] = min(s[0], at), max(s[1], at)
		out[attempt] = s
	}
	return out
}

func ticks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "tick %d\n", i)
	}
	return b.String() + "finished\n"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
