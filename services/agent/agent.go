package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// Config is what an agent is built from.
type Config struct {
	Server    string // the server's URL
	JoinToken string // needed only until the node has joined
	DataDir   string // credential, lease, attempts, checkpoints
	Name      string // node name; the host name by default
	Runtime   string // agentapi.RuntimeProcess, RuntimeDocker or RuntimePodman
	Version   string // the agent's version, shown in the admin console
	// Shim is the command that runs an attempt's supervisor; the attempt
	// directory is appended. `gantry agent shim` in production.
	Shim []string
	GPUs gpu.Source
	// Resources the node offers; zero fields are measured.
	CPUMilli, MemoryMiB, ScratchMiB int64
	// CheckpointRoot holds a directory per job that survives its attempts;
	// <DataDir>/checkpoints when empty. Put it on shared storage for jobs to
	// resume on another node.
	CheckpointRoot string
	// PollWait is how long one lease poll may wait on the server.
	PollWait time.Duration
	// For the container runtimes: ContainerCLI is the docker or podman command (the
	// runtime's name on PATH when empty), ContainerNetwork the network containers
	// join ("host" when empty), PullTimeout bounds one image pull (10 minutes when
	// zero), PrePullEvery is how often the images to hold ahead of need are looked
	// after (a minute when zero).
	ContainerCLI     string
	ContainerNetwork string
	PullTimeout      time.Duration
	PrePullEvery     time.Duration
	// InterruptionURL is the instance-metadata endpoint that announces a spot
	// interruption; empty watches none. InterruptionFormat is NoticeAWS, NoticeGCP or
	// NoticeAzure (guessed from the URL when empty); InterruptionPoll is how often it
	// is read (5 s when zero).
	InterruptionURL    string
	InterruptionFormat string
	InterruptionPoll   time.Duration
	HTTP               *http.Client
	Log                *slog.Logger
}

// Agent is the node agent.
type Agent struct {
	cfg    Config
	client *client
	log    *slog.Logger

	heartbeatEvery atomic.Int64 // ns
	nodeTimeout    atomic.Int64 // ns
	killGraceNS    atomic.Int64

	// notice watches for a spot interruption; nil when no endpoint is set.
	notice  *noticeWatcher
	beatNow chan struct{}

	// cgroups is where jobs get their CPU and memory limits; nil where cgroup v2
	// cannot be used, and on container runtimes, which limit their containers.
	cgroups *cgroupTree
	// cli runs containers on a docker or podman node; nil for the process runtime.
	cli *containerCLI
	// images follows the images the node holds, for pre-pulls and the heartbeat.
	images *imageKeeper
	// usage turns the jobs' CPU readings into reports; the heartbeat alone uses it.
	usage *usageMeter

	mu       sync.Mutex
	attempts map[agentapi.AttemptRef]*attempt
	orphans  map[agentapi.AttemptRef]bool // reported as unknown to this node
	lastInv  []byte
	wg       sync.WaitGroup
}

// New checks cfg and returns an agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("--data-dir is required: the agent keeps its credential and its jobs' files there")
	}
	var cli *containerCLI
	switch cfg.Runtime {
	case agentapi.RuntimeProcess:
	case agentapi.RuntimeDocker, agentapi.RuntimePodman:
		var err error
		if cli, err = newContainerCLI(cfg.Runtime, cfg.ContainerCLI); err != nil {
			return nil, err
		}
		if cfg.ContainerNetwork == "" {
			cfg.ContainerNetwork = "host"
		}
		if cfg.PullTimeout <= 0 {
			cfg.PullTimeout = 10 * time.Minute
		}
		if cfg.PrePullEvery <= 0 {
			cfg.PrePullEvery = time.Minute
		}
	default:
		return nil, fmt.Errorf("--runtime %q: want process, docker or podman", cfg.Runtime)
	}
	if len(cfg.Shim) == 0 || cfg.GPUs == nil || cfg.Log == nil || cfg.HTTP == nil {
		return nil, errors.New("agent config lacks its shim command, GPU source, HTTP client or logger")
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 25 * time.Second
	}
	if cfg.CheckpointRoot == "" {
		cfg.CheckpointRoot = filepath.Join(cfg.DataDir, "checkpoints")
	}
	if err := measureResources(&cfg); err != nil {
		return nil, err
	}
	c, err := newClient(cfg.Server, cfg.HTTP)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, client: c, log: cfg.Log, usage: newUsageMeter(), attempts: map[agentapi.AttemptRef]*attempt{}, orphans: map[agentapi.AttemptRef]bool{},
		beatNow: make(chan struct{}, 1), cli: cli}
	if cli != nil {
		a.images = newImageKeeper(cli, cfg.PullTimeout, cfg.Log)
	}
	if cfg.InterruptionURL != "" {
		format := cfg.InterruptionFormat
		if format == "" {
			if format, err = NoticeFormatOf(cfg.InterruptionURL); err != nil {
				return nil, fmt.Errorf("--interruption-url: %w", err)
			}
		} else if !slices.Contains(NoticeFormats, format) {
			return nil, fmt.Errorf("--interruption-format %q: want one of %s", format, strings.Join(NoticeFormats, ", "))
		}
		every := cfg.InterruptionPoll
		if every <= 0 {
			every = 5 * time.Second
		}
		a.notice = &noticeWatcher{endpoint: cfg.InterruptionURL, format: format, every: every, http: cfg.HTTP, log: cfg.Log, now: time.Now}
	}
	a.setTiming(agentapi.Timing{HeartbeatIntervalMS: 5000, NodeTimeoutMS: 30000, KillGraceMS: 10000})
	return a, nil
}

func (a *Agent) setTiming(t agentapi.Timing) {
	if t.HeartbeatIntervalMS > 0 {
		a.heartbeatEvery.Store(int64(time.Duration(t.HeartbeatIntervalMS) * time.Millisecond))
	}
	if t.NodeTimeoutMS > 0 {
		a.nodeTimeout.Store(int64(time.Duration(t.NodeTimeoutMS) * time.Millisecond))
	}
	if t.KillGraceMS > 0 {
		a.killGraceNS.Store(int64(time.Duration(t.KillGraceMS) * time.Millisecond))
	}
}

func (a *Agent) killGrace() time.Duration { return time.Duration(a.killGraceNS.Load()) }

// Run joins if needed, re-attaches to the attempts that run, then heartbeats and
// polls for leases until ctx ends or the server refuses the node's credential.
// Jobs keep running when Run returns.
func (a *Agent) Run(ctx context.Context) error {
	for _, d := range []string{a.cfg.DataDir, a.attemptsDir(), a.cfg.CheckpointRoot} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if a.cli != nil {
		cctx, cancel := context.WithTimeout(ctx, cliTimeout)
		v, err := a.cli.check(cctx)
		cancel()
		if err != nil {
			return err
		}
		a.log.Info("container runtime answers", "runtime", a.cli.runtime, "version", v)
	}
	id, err := a.ensureJoined(ctx)
	if err != nil {
		return err
	}
	a.client.credential = id.Credential
	a.log.Info("agent running", "node", id.Name, "server", a.cfg.Server, "runtime", a.cfg.Runtime, "simulated_gpus", a.cfg.GPUs.Simulated())
	if a.cli != nil {
		a.log.Info("jobs run in containers", "runtime", a.cli.runtime, "cli", a.cli.path, "network", a.cfg.ContainerNetwork)
	} else if a.cgroups, err = setupCgroups(); err != nil {
		a.log.Info("jobs run without cgroup v2 CPU and memory limits", "why", err)
	} else {
		a.log.Info("jobs run in cgroup v2 with their CPU and memory limits", "cgroup", a.cgroups.jobs)
	}
	if err := a.reattach(ctx); err != nil {
		return err
	}
	// Heartbeat once before anything starts, so that the lease that keeps jobs
	// alive exists before the first job does.
	if err := a.beat(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); a.heartbeatLoop(ctx, cancel) }()
	go func() { defer loops.Done(); a.leaseLoop(ctx, cancel) }()
	go func() { defer loops.Done(); a.enforceMemory(ctx) }()
	if a.notice != nil {
		loops.Add(1)
		go func() { defer loops.Done(); a.notice.run(ctx, a.beatSoon) }()
	}
	if a.images != nil {
		loops.Add(1)
		go func() { defer loops.Done(); a.images.run(ctx, a.cfg.PrePullEvery) }()
	}
	loops.Wait()
	a.wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (a *Agent) attemptsDir() string { return filepath.Join(a.cfg.DataDir, "attempts") }

// ensureJoined returns the saved identity, or joins with the join token.
func (a *Agent) ensureJoined(ctx context.Context) (*identity, error) {
	id, err := loadIdentity(a.cfg.DataDir)
	if err != nil || id != nil {
		return id, err
	}
	if a.cfg.JoinToken == "" {
		return nil, fmt.Errorf("this node has not joined yet: give --join-token (create one on the server with `gantry join-token create`)")
	}
	inv, err := a.cfg.GPUs.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover GPUs: %w", err)
	}
	req := agentapi.JoinRequest{
		JoinToken: a.cfg.JoinToken, Name: a.cfg.Name, AgentVersion: a.cfg.Version, Runtime: a.cfg.Runtime,
		CPUMilli: a.cfg.CPUMilli, MemoryMiB: a.cfg.MemoryMiB, ScratchMiB: a.cfg.ScratchMiB, Inventory: inv,
	}
	retry := backoff{}
	for {
		res, err := a.client.join(ctx, req)
		if err == nil {
			id := identity{Server: a.cfg.Server, NodeID: res.NodeID, Name: res.Name, Credential: res.Credential}
			if err := saveIdentity(a.cfg.DataDir, id); err != nil {
				return nil, err
			}
			a.setTiming(res.Timing)
			a.log.Info("joined", "node", res.Name, "node_id", res.NodeID)
			return &id, nil
		}
		var ae *apiError
		if errors.Is(err, ErrUnauthorized) || errors.As(err, &ae) && ae.status == http.StatusBadRequest {
			return nil, fmt.Errorf("join %s: %w", a.cfg.Server, err)
		}
		a.log.Warn("cannot reach the server to join; retrying", "err", err, "in", retry.fail())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(retry.wait()):
		}
	}
}

// beatSoon asks for a heartbeat now: it carries news the server must have at once.
func (a *Agent) beatSoon() {
	select {
	case a.beatNow <- struct{}{}:
	default:
	}
}

// heartbeatLoop heartbeats and renews the lease that keeps the node's jobs alive.
func (a *Agent) heartbeatLoop(ctx context.Context, fatal context.CancelCauseFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.beatNow:
		case <-time.After(time.Duration(a.heartbeatEvery.Load())):
		}
		if err := a.beat(ctx); err != nil {
			fatal(err)
			return
		}
	}
}

// beat sends one heartbeat and renews the lease from when it was sent. Only a
// refused credential is an error: the agent cannot go on.
func (a *Agent) beat(ctx context.Context) error {
	sent := time.Now()
	res, err := a.heartbeat(ctx)
	switch {
	case err == nil:
		a.setTiming(res.Timing)
		a.renewFence(sent)
		if res.TelemetryError != "" {
			a.log.Warn("the server refused this heartbeat's GPU sample", "why", res.TelemetryError)
		}
	case errors.Is(err, ErrUnauthorized):
		return fmt.Errorf("the server refused this node's credential (revoked, or the node was deleted): remove %s and join again with a new join token: %w",
			filepath.Join(a.cfg.DataDir, identityFile), err)
	case serverDown(err):
		// Nothing can be rescheduled while the server is down: keep the jobs.
		a.renewFence(sent)
		a.log.Warn("server is down; jobs keep running", "err", err)
	case ctx.Err() == nil:
		a.log.Warn("heartbeat failed", "err", err)
	}
	return nil
}

func (a *Agent) heartbeat(ctx context.Context) (agentapi.HeartbeatResponse, error) {
	req := agentapi.HeartbeatRequest{Interruption: a.notice.current(), Images: a.images.report()}
	if now := time.Now(); a.usage.due(now, usageBeats*time.Duration(a.heartbeatEvery.Load())) {
		req.Jobs = a.usage.report(now, a.cpuOfAttempts(now))
	}
	if s, err := a.cfg.GPUs.Sample(ctx); err == nil {
		req.Sample = &s
	} else {
		a.log.Warn("cannot sample the GPUs", "err", err)
	}
	inv, err := a.cfg.GPUs.Discover(ctx)
	if err != nil {
		a.log.Warn("cannot discover the GPUs", "err", err)
	}
	b, _ := json.Marshal(inv)
	// The first heartbeat of a run sends the inventory too: it may have changed while the agent was down.
	if err == nil && string(b) != string(a.lastInv) {
		req.Inventory = &inv
	}
	// A slow answer still renews the lease from when the heartbeat was sent, so it
	// may take up to half the node timeout.
	hctx, cancel := context.WithTimeout(ctx, time.Duration(a.nodeTimeout.Load())/2)
	defer cancel()
	res, herr := a.client.heartbeat(hctx, req)
	if herr == nil && err == nil {
		a.lastInv = b
	}
	if herr == nil {
		a.images.reported(req.Images)
		a.images.want(res.PrePull)
	}
	return res, herr
}

func (a *Agent) renewFence(sent time.Time) {
	if err := writeFence(a.cfg.DataDir, fenceFor(sent, time.Duration(a.nodeTimeout.Load()))); err != nil {
		a.log.Error("cannot renew the job lease; jobs will stop", "err", err)
	}
}

// leaseLoop long-polls for the node's leases and reconciles what runs with them.
func (a *Agent) leaseLoop(ctx context.Context, fatal context.CancelCauseFunc) {
	seen := ""
	retry := backoff{}
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, a.cfg.PollWait+15*time.Second)
		ls, err := a.client.leases(pctx, seen, a.cfg.PollWait)
		cancel()
		if errors.Is(err, ErrUnauthorized) {
			fatal(fmt.Errorf("the server refused this node's credential: %w", err))
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("lease poll failed", "err", err, "retry_in", retry.fail())
			}
			select {
			case <-ctx.Done():
			case <-time.After(retry.wait()):
			}
			continue
		}
		retry.reset()
		a.reconcile(ctx, ls)
		seen = ls.Version
	}
}

// reconcile makes what runs match the leases: start what is new, pass on stop
// requests, kill what the server no longer wants, forget what is finished.
func (a *Agent) reconcile(ctx context.Context, ls agentapi.Leases) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := make(map[agentapi.AttemptRef]agentapi.Lease, len(ls.Allocations))
	for _, l := range ls.Allocations {
		want[l.AttemptRef] = l
	}
	for ref, at := range a.attempts {
		l, ok := want[ref]
		switch {
		case ok && l.Stop != nil:
			at.requestStop(*l.Stop)
		case ok:
		case at.isFinished():
			<-at.done
			if err := os.RemoveAll(at.files.dir); err != nil {
				a.log.Warn("cannot remove a finished attempt", "dir", at.files.dir, "err", err)
			}
			delete(a.attempts, ref)
		default:
			at.markStale()
		}
	}
	for ref, l := range want {
		if _, ok := a.attempts[ref]; ok {
			continue
		}
		if l.Started || l.Stop != nil {
			a.reportOrphan(ctx, ref)
			continue
		}
		if err := a.start(ctx, l); err != nil {
			a.log.Error("cannot start an attempt", "job", ref.JobID, "attempt", ref.Attempt, "err", err)
			a.reportOrphan(ctx, ref)
		}
	}
}

// reportOrphan tells the server, once, that an attempt it believes started has no
// record on this node (its directory was removed), so that the job can move on.
func (a *Agent) reportOrphan(ctx context.Context, ref agentapi.AttemptRef) {
	if a.orphans[ref] {
		return
	}
	a.orphans[ref] = true
	code := -1
	r := agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &code, Message: "the node agent has no record of this attempt"}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.client.report(ctx, r); err != nil && !errors.Is(err, errStale) {
			a.log.Warn("cannot report an unknown attempt", "job", ref.JobID, "err", err)
			a.mu.Lock()
			delete(a.orphans, ref)
			a.mu.Unlock()
		}
	}()
}

// start prepares an attempt's directories and launches its supervisor.
func (a *Agent) start(ctx context.Context, l agentapi.Lease) error {
	dir := filepath.Join(a.attemptsDir(), attemptDirName(l.AttemptRef))
	f := attemptFiles{dir: dir}
	checkpoint := filepath.Join(a.cfg.CheckpointRoot, strconv.FormatInt(l.JobID, 10))
	for _, d := range []string{f.path(workDir), f.path(scratchDir), checkpoint} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	removeStaleRequest(checkpoint)
	token := l.JobToken
	if token == "" {
		// The answer that carried it was lost (or a previous agent died before it
		// started the attempt): only a new token will do, since none is stored.
		var err error
		if token, err = a.client.jobToken(ctx, l.AttemptRef); err != nil {
			return fmt.Errorf("get a job token: %w", err)
		}
	}
	// The lease file keeps no secret; the job's spec does, readable by the agent alone.
	l.JobToken = ""
	stored := l
	stored.SecretEnv = nil
	if err := f.writeJSON(leaseFile, stored); err != nil {
		return err
	}
	jc := jobContext{work: f.path(workDir), scratch: f.path(scratchDir), checkpoints: checkpoint, server: a.client.base, token: token}
	var container *containerSpec
	if a.cli != nil {
		container = a.containerSpec(l, f, checkpoint)
		jc.work, jc.scratch, jc.checkpoints, jc.container = containerWork, containerScratch, containerCheckpoint, true
		a.images.usedImage(l.Image)
	}
	spec := shimSpec{
		Command: l.Command, WorkDir: f.path(workDir), Fence: filepath.Join(a.cfg.DataDir, fenceFile),
		Env: jobEnv(l, jc), MemoryMiB: l.MemoryMiB, Container: container,
	}
	if a.cgroups != nil {
		cg, err := a.cgroups.create(attemptDirName(l.AttemptRef), l.CPUMilli, l.MemoryMiB)
		if err != nil {
			a.log.Warn("the attempt runs without its CPU and memory limits", "job", l.JobID, "attempt", l.Attempt, "err", err)
		}
		spec.Cgroup = cg
	}
	if err := f.writeSecretJSON(specFile, spec); err != nil {
		return err
	}
	reaped, err := launchShim(a.cfg.Shim, f)
	if err != nil {
		return err
	}
	a.log.Info("attempt started", "job", l.JobID, "attempt", l.Attempt, "replica", l.Replica, "gpus", len(l.Devices))
	at := newAttempt(l.AttemptRef, dir, checkpoint)
	at.reaped, at.cgroup = reaped, spec.Cgroup
	at.useContainer(spec.Container)
	a.track(ctx, at)
	return nil
}

// containerSpec is how the attempt's container runs: the lease's image, GPUs and
// limits, with its working, scratch and checkpoint directories bound in.
func (a *Agent) containerSpec(l agentapi.Lease, f attemptFiles, checkpoint string) *containerSpec {
	var gpus []string
	for _, d := range l.Devices {
		gpus = append(gpus, d.Visible())
	}
	return &containerSpec{
		Runtime: a.cli.runtime, CLI: a.cli.path, Name: containerName(l.AttemptRef, f.dir), Image: l.Image,
		Network: a.cfg.ContainerNetwork, PullTimeoutMS: a.cfg.PullTimeout.Milliseconds(),
		GPUs: gpus, CPUMilli: l.CPUMilli, MemoryMiB: l.MemoryMiB,
		Mounts: []mount{
			{Host: f.path(workDir), Container: containerWork},
			{Host: f.path(scratchDir), Container: containerScratch},
			{Host: checkpoint, Container: containerCheckpoint},
		},
		Labels: map[string]string{
			"gantry.job": strconv.FormatInt(l.JobID, 10), "gantry.attempt": strconv.Itoa(l.Attempt), "gantry.replica": strconv.Itoa(l.Replica),
		},
	}
}

func (a *Agent) track(ctx context.Context, at *attempt) {
	a.attempts[at.ref] = at
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.supervise(ctx, at)
	}()
}

// reattach resumes supervising the attempts a previous agent left in the data dir.
func (a *Agent) reattach(ctx context.Context) error {
	entries, err := os.ReadDir(a.attemptsDir())
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range entries {
		f := attemptFiles{dir: filepath.Join(a.attemptsDir(), e.Name())}
		var l agentapi.Lease
		if err := f.readJSON(leaseFile, &l); err != nil {
			a.log.Warn("skipping an attempt directory without its lease", "dir", f.dir, "err", err)
			continue
		}
		at := newAttempt(l.AttemptRef, f.dir, filepath.Join(a.cfg.CheckpointRoot, strconv.FormatInt(l.JobID, 10)))
		if f.has(finishedFile) {
			close(at.done)
			close(at.finished)
			a.attempts[at.ref] = at
			continue
		}
		var spec shimSpec
		if err := f.readJSON(specFile, &spec); err == nil {
			at.cgroup = spec.Cgroup
			at.useContainer(spec.Container)
		}
		a.log.Info("re-attached to an attempt", "job", l.JobID, "attempt", l.Attempt, "replica", l.Replica)
		a.track(ctx, at)
	}
	return nil
}
