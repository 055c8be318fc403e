package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/agent/containertest"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// These tests run real containers, in docker and in podman, through the shim as the
// agent starts it; each runtime skips (visibly) where it cannot run containers.

// containerAttempt is one attempt prepared to run in a container.
type containerAttempt struct {
	files      attemptFiles
	spec       *containerSpec
	checkpoint string
	cli        *containerCLI
}

// attempt is what the agent would track for it.
func (ca containerAttempt) attempt() *attempt {
	at := newAttempt(agentapi.AttemptRef{JobID: 7, Attempt: 1}, ca.files.dir, ca.checkpoint)
	at.useContainer(ca.spec)
	return at
}

// startContainer prepares an attempt that runs script in a container of runtime and
// starts its shim; change adjusts the container before it starts.
func startContainer(t *testing.T, runtime, fence, script string, change ...func(*containerSpec)) containerAttempt {
	t.Helper()
	cli, image := containertest.Runtime(t, runtime)
	f := attemptFiles{dir: t.TempDir()}
	ca := containerAttempt{files: f, checkpoint: t.TempDir(), cli: &containerCLI{runtime: runtime, path: cli}}
	for _, d := range []string{f.path(workDir), f.path(scratchDir)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	ref := agentapi.AttemptRef{JobID: 7, Attempt: 1}
	ca.spec = &containerSpec{
		Runtime: runtime, CLI: cli, Name: containerName(ref, f.dir), Image: image, Network: "none", PullTimeoutMS: 60000,
		Mounts: []mount{{Host: f.path(workDir), Container: containerWork}, {Host: f.path(scratchDir), Container: containerScratch}, {Host: ca.checkpoint, Container: containerCheckpoint}},
		Labels: map[string]string{"gantry.job": "7"},
	}
	for _, c := range change {
		c(ca.spec)
	}
	t.Cleanup(func() { containertest.Remove(t, cli, ca.spec.Name) })
	env := jobEnv(agentapi.Lease{AttemptRef: ref, JobName: "boxed", Env: map[string]string{"GREETING": "hello  world"}},
		jobContext{work: containerWork, scratch: containerScratch, checkpoints: containerCheckpoint, server: "http://gantry:8080", token: "gjb_job", container: true})
	spec := shimSpec{Command: []string{"/bin/sh", "-c", script}, Env: env, Fence: fence, Container: ca.spec}
	if err := f.writeSecretJSON(specFile, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := launchShim(testShim(), f); err != nil {
		t.Fatal(err)
	}
	endShimAtCleanup(t, f, func() { containertest.Remove(t, cli, ca.spec.Name) })
	return ca
}

// eachRuntime runs test for docker and podman, in parallel.
func eachRuntime(t *testing.T, test func(t *testing.T, runtime string)) {
	for _, rt := range containertest.Runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			test(t, rt)
		})
	}
}

func cgroupV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(cgroupFS, &st) == nil && st.Type == cgroup2Magic
}

// gone reports whether the runtime has forgotten the container.
func (ca containerAttempt) gone(t *testing.T) bool {
	t.Helper()
	st, err := ca.cli.state(context.Background(), ca.spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	return st == nil
}

func TestContainerRunsTheJob(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		ca := startContainer(t, rt, farFence(t), `echo "$GREETING from $(pwd) as job $GANTRY_JOB_ID attempt $GANTRY_ATTEMPT home $HOME"; echo oops >&2
echo kept > "$GANTRY_CHECKPOINT_DIR/state"; echo scratch > "$TMPDIR/s"; echo "token $GANTRY_JOB_TOKEN server $GANTRY_SERVER gpus [$CUDA_VISIBLE_DEVICES]"; exit 3`)
		st := waitExit(t, ca.files)
		if st.ExitCode != 3 || st.Signal != "" {
			t.Fatalf("exit = %+v, want code 3", st)
		}
		want := "hello  world from /gantry/work as job 7 attempt 1 home /gantry/work\ntoken gjb_job server http://gantry:8080 gpus []\n"
		if got := read(t, ca.files.path(stdoutFile)); got != want {
			t.Errorf("stdout = %q, want %q", got, want)
		}
		if got := read(t, ca.files.path(stderrFile)); got != "oops\n" {
			t.Errorf("stderr = %q", got)
		}
		if got := read(t, filepath.Join(ca.checkpoint, "state")); got != "kept\n" {
			t.Errorf("checkpoint dir holds %q", got)
		}
		if got := read(t, ca.files.path(scratchDir+"/s")); got != "scratch\n" {
			t.Errorf("scratch dir holds %q", got)
		}
		if ca.files.has(envFileName) {
			t.Error("the environment file (it holds the job token) was left behind")
		}
		// The exit is recorded before the container is removed: wait for the shim.
		waitGone(t, ca)
	})
}

func waitGone(t *testing.T, ca containerAttempt) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ca.gone(t) {
		if time.Now().After(deadline) {
			t.Fatal("the container was not removed after its exit was recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The container gets the job's CPU and memory limits; a job over its memory is
// killed, and its exit says so.
func TestContainerLimits(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		limits := func(c *containerSpec) { c.CPUMilli, c.MemoryMiB = 500, 64 }
		ca := startContainer(t, rt, farFence(t), `cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null; true`, limits)
		if st := waitExit(t, ca.files); st.ExitCode != 0 {
			t.Fatalf("exit = %+v", st)
		}
		out := read(t, ca.files.path(stdoutFile))
		if !strings.Contains(out, strconv.Itoa(64<<20)+"\n") || !strings.Contains(out, "50000") {
			t.Errorf("the container's cgroup says %q, want 64 MiB and half a CPU (50000 of 100000)", out)
		}
		hog := startContainer(t, rt, farFence(t), `echo start; tail /dev/zero`, func(c *containerSpec) { c.MemoryMiB = 32 })
		st := waitExit(t, hog.files)
		if st.ExitCode != 137 {
			t.Fatalf("exit of a job over its memory = %+v, want 137", st)
		}
		// podman 4 records no OOM kill on cgroup v1 (its state says OOMKilled false).
		if rt == agentapi.RuntimePodman && !cgroupV2() {
			t.Logf("podman on cgroup v1: exit %+v, without the reason", st)
		} else if !strings.Contains(st.Message, "memory limit of 32 MiB") {
			t.Errorf("exit of a job over its memory = %+v, want why", st)
		}
	})
}

// The stop protocol: a checkpoint request (file and SIGUSR1 through the runtime)
// that the job answers by saving and exiting; then SIGTERM, and SIGKILL for a job
// that ignores it.
func TestContainerStopProtocol(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		ag := &Agent{}
		ag.killGraceNS.Store(int64(time.Minute))
		ca := startContainer(t, rt, farFence(t), `trap 'cat /gantry/checkpoint/`+CheckpointRequestFile+` > /gantry/checkpoint/saved; exit 0' USR1; echo ready; while true; do sleep 0.05; done`)
		waitRunning(t, ca.files)
		var p stopProtocol
		p.begin(agentapi.Stop{Reason: agentapi.StopPreempt, GraceMS: 60000}, ag, ca.attempt(), discard())
		if p.phase != 1 {
			t.Fatalf("phase after begin = %d, want checkpointing", p.phase)
		}
		if st := waitExit(t, ca.files); st.ExitCode != 0 {
			t.Fatalf("exit = %+v, want a clean exit after the checkpoint", st)
		}
		var req map[string]any
		if err := json.Unmarshal([]byte(read(t, filepath.Join(ca.checkpoint, "saved"))), &req); err != nil || req["reason"] != agentapi.StopPreempt {
			t.Fatalf("checkpoint request = %v, %v", req, err)
		}

		ag.killGraceNS.Store(int64(300 * time.Millisecond))
		stubborn := startContainer(t, rt, farFence(t), `trap "" TERM; echo ready; while true; do sleep 0.05; done`)
		waitRunning(t, stubborn.files)
		at := stubborn.attempt()
		var q stopProtocol
		q.begin(agentapi.Stop{Reason: agentapi.StopCancel}, ag, at, discard())
		for q.phase != 3 {
			q.advance(ag, at, discard())
			time.Sleep(20 * time.Millisecond)
		}
		if st := waitExit(t, stubborn.files); st.ExitCode != 137 || st.Signal != "SIGKILL" {
			t.Fatalf("exit = %+v, want 137 by SIGKILL after the ignored SIGTERM", st)
		}
	})
}

// A stop that comes once the container is launched, before it runs, waits for it to
// run and then follows the protocol: the checkpoint request reaches the job (which
// saves and exits, or dies of SIGUSR1 had it not set its trap yet), within the grace,
// never a SIGTERM or SIGKILL, nor a start cut off unseen. The runtime's `run` is held
// until the stop has begun, so the stop lands in that instant every time.
func TestContainerStopAtTheInstantOfStart(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		dir := t.TempDir()
		launched, release := filepath.Join(dir, "launched"), filepath.Join(dir, "release")
		t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
		held := func(c *containerSpec) {
			wrapper := filepath.Join(dir, rt)
			script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = run ]; then echo run > %q; while [ ! -e %q ]; do sleep 0.02; done; fi\nexec %q \"$@\"\n", launched, release, c.CLI)
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			c.CLI = wrapper
		}
		ca := startContainer(t, rt, farFence(t), `trap 'cat /gantry/checkpoint/`+CheckpointRequestFile+` > /gantry/checkpoint/saved; exit 0' USR1; echo ready; while true; do sleep 0.05; done`, held)
		waitFile(t, launched)
		ag := &Agent{}
		ag.killGraceNS.Store(int64(time.Minute))
		at := ca.attempt()
		var p stopProtocol
		p.begin(agentapi.Stop{Reason: agentapi.StopPreempt, GraceMS: 60000}, ag, at, discard())
		if p.phase != 0 || p.pending == nil {
			t.Fatalf("a stop before the container runs: phase %d, pending %v; want it pending", p.phase, p.pending)
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !ca.files.has(exitFile) {
			if time.Now().After(deadline) {
				t.Fatalf("the attempt did not end; stop phase %d", p.phase)
			}
			p.advance(ag, at, discard())
			time.Sleep(20 * time.Millisecond)
		}
		st := waitExit(t, ca.files)
		if p.phase != 1 {
			t.Errorf("stop phase at the exit = %d, want 1 (checkpointing: no SIGTERM, no SIGKILL)", p.phase)
		}
		if !ca.files.has(pidFile) {
			t.Error("the container never ran: its start was cut off")
		}
		saved := st.ExitCode == 0 && strings.Contains(read(t, filepath.Join(ca.checkpoint, "saved")), agentapi.StopPreempt)
		if !saved && st.Signal != "SIGUSR1" {
			t.Fatalf("exit = %+v, want a checkpoint saved (exit 0) or the checkpoint request's SIGUSR1", st)
		}
	})
}

// A lease that runs out stops the container through its runtime, SIGTERM first.
func TestContainerFencedWhenTheLeaseRunsOut(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		fenceDir := t.TempDir()
		fence := filepath.Join(fenceDir, fenceFile)
		if err := writeFence(fenceDir, fenceFor(time.Now(), time.Hour)); err != nil {
			t.Fatal(err)
		}
		ca := startContainer(t, rt, fence, `echo ready; sleep 300`)
		waitRunning(t, ca.files)
		now := time.Now()
		if err := writeFence(fenceDir, fenceDeadlines{term: now, kill: now.Add(5 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		st := waitExit(t, ca.files)
		if st.ExitCode != 143 || st.Signal != "SIGTERM" || st.Message != fencedMessage {
			t.Fatalf("fenced exit = %+v, want 143 by SIGTERM and why", st)
		}
	})
}

// An image that cannot be pulled fails the attempt with the reason, at once; one
// whose registry never answers fails at the pull timeout; a stop while pulling ends
// the attempt without waiting for the pull.
func TestContainerPullFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // a registry that takes connections and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	silent := ln.Addr().String() + "/gantry/silent:1"
	eachRuntime(t, func(t *testing.T, rt string) {
		missing := startContainer(t, rt, farFence(t), `true`, func(c *containerSpec) { c.Image = "registry.invalid/gantry/nothing:1" })
		st := waitExit(t, missing.files)
		if st.ExitCode != 125 || !strings.Contains(st.Message, "cannot pull image registry.invalid/gantry/nothing:1: ") {
			t.Errorf("exit of an unpullable image = %+v", st)
		}
		if got := read(t, missing.files.path(stderrFile)); !strings.Contains(got, "gantry: pulling image registry.invalid/gantry/nothing:1\n") {
			t.Errorf("stderr = %q, want the pull said", got)
		}
		if missing.files.has(pidFile) {
			t.Error("an attempt whose image was never pulled has a pid: it would be reported started")
		}

		slow := startContainer(t, rt, farFence(t), `true`, func(c *containerSpec) { c.Image, c.PullTimeoutMS = silent, 1500 })
		st = waitExit(t, slow.files)
		if st.ExitCode != 125 || !strings.Contains(st.Message, "did not finish within the pull timeout of 1.5s") {
			t.Errorf("exit of a pull that hangs = %+v", st)
		}

		// waitExit gives up long before this pull's timeout, and the stop's grace.
		stopped := startContainer(t, rt, farFence(t), `true`, func(c *containerSpec) { c.Image, c.PullTimeoutMS = silent, 600000 })
		waitFile(t, stopped.files.path(stderrFile))
		at := stopped.attempt()
		if err := at.signal(syscall.SIGUSR1); !errors.Is(err, errNotRunning) {
			t.Errorf("a checkpoint request to a container that does not run: %v", err)
		}
		ag := &Agent{}
		ag.killGraceNS.Store(int64(time.Minute))
		var p stopProtocol
		p.begin(agentapi.Stop{Reason: agentapi.StopPreempt, GraceMS: 600000}, ag, at, discard())
		st = waitExit(t, stopped.files)
		if st.ExitCode != -1 || !strings.Contains(st.Message, "stopped by SIGTERM before its container started") {
			t.Errorf("exit of an attempt stopped while pulling = %+v", st)
		}
	})
}

// A container outlives its shim: the agent then asks the runtime how it ended, and
// stops one that still runs, since nothing would follow it any more.
func TestContainerOutlivesItsShim(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		ended := startContainer(t, rt, farFence(t), `echo ready; sleep 1; exit 4`)
		running := startContainer(t, rt, farFence(t), `echo ready; sleep 300`)
		for _, ca := range []containerAttempt{ended, running} {
			waitRunning(t, ca.files)
			if err := syscall.Kill(readPID(ca.files.path(shimPIDFile)), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := ended.cli.state(context.Background(), ended.spec.Name)
			if err != nil || st == nil {
				t.Fatalf("the container of a killed shim: %+v, %v", st, err)
			}
			if !st.Running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the container did not end")
			}
			time.Sleep(50 * time.Millisecond)
		}
		ag := &Agent{}
		for ca, want := range map[containerAttempt]struct {
			code int
			why  string
		}{ended: {4, "its supervisor vanished after its container ended"}, running: {-1, "while its container ran: the container was stopped"}} {
			at := ca.attempt()
			var st *exitStatus
			for st == nil {
				var err error
				if st, err = ag.exitOf(at); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if st.ExitCode != want.code || !strings.Contains(st.Message, want.why) {
				t.Errorf("%s: exit = %+v, want %d (%s)", ca.spec.Name, st, want.code, want.why)
			}
			if !ca.gone(t) {
				t.Errorf("%s was not removed", ca.spec.Name)
			}
		}
	})
}

// A container's CPU use is read from its cgroup, through the pid of its init.
func TestContainerCPUUse(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		ca := startContainer(t, rt, farFence(t), `echo ready; while true; do :; done`, func(c *containerSpec) { c.CPUMilli = 200 })
		waitRunning(t, ca.files)
		first, err := pidCgroupCPU(ca.files.jobPID())
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			now, err := pidCgroupCPU(ca.files.jobPID())
			if err != nil {
				t.Fatal(err)
			}
			if now > first {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the spinning container's CPU stayed at %d µs", now)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// podman gives a job its GPUs as CDI devices named by UUID: a CDI spec for two
// (simulated) GPUs whose edits mark the container shows podman resolving them.
func TestPodmanSelectsGPUsThroughCDI(t *testing.T) {
	containertest.Runtime(t, agentapi.RuntimePodman)
	dir := "/var/run/cdi"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Skipf("SKIP: cannot write CDI specs to %s: %v", dir, err)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	uuids := []string{"GPU-gantry-test-" + stamp + "-0", "GPU-gantry-test-" + stamp + "-1"}
	var devices []map[string]any
	for i, u := range uuids {
		devices = append(devices, map[string]any{"name": u, "containerEdits": map[string]any{"env": []string{fmt.Sprintf("GANTRY_TEST_CDI_%d=%s", i, u)}}})
	}
	b, _ := json.Marshal(map[string]any{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices, "containerEdits": map[string]any{}})
	path := filepath.Join(dir, "gantry-test-"+stamp+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Skipf("SKIP: cannot write a CDI spec: %v", err)
	}
	t.Cleanup(func() { os.Remove(path) })
	ca := startContainer(t, agentapi.RuntimePodman, farFence(t), `echo "$GANTRY_TEST_CDI_0 $GANTRY_TEST_CDI_1"`, func(c *containerSpec) { c.GPUs = uuids })
	if st := waitExit(t, ca.files); st.ExitCode != 0 {
		t.Fatalf("exit = %+v: %s", st, read(t, ca.files.path(stderrFile)))
	}
	if got := read(t, ca.files.path(stdoutFile)); got != uuids[0]+" "+uuids[1]+"\n" {
		t.Errorf("the container saw CDI devices %q, want both", got)
	}
	unknown := startContainer(t, agentapi.RuntimePodman, farFence(t), `true`, func(c *containerSpec) { c.GPUs = []string{"GPU-gantry-test-" + stamp + "-none"} })
	if st := waitExit(t, unknown.files); st.ExitCode == 0 || !strings.Contains(st.Message, "the container runtime could not run the job: ") || !strings.Contains(st.Message, "CDI") {
		t.Errorf("a GPU podman does not know: %+v", st)
	}
}

// The image keeper reports which of the wanted and used images the node holds,
// once until they change; a pre-pull that fails is not tried again at once.
func TestImageKeeper(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		cli, image := containertest.Runtime(t, rt)
		k := newImageKeeper(&containerCLI{runtime: rt, path: cli}, 10*time.Second, discard())
		if r := k.report(); r != nil {
			t.Fatalf("a report before the first look: %+v", r)
		}
		k.want([]string{"registry.invalid/gantry/wanted:1", image})
		<-k.kick
		k.usedImage("registry.invalid/gantry/used:1")
		k.look(context.Background())
		r := k.report()
		if r == nil || len(r.Pulled) != 1 || r.Pulled[0] != image {
			t.Fatalf("report = %+v, want only %s", r, image)
		}
		k.reported(r)
		if again := k.report(); again != nil {
			t.Fatalf("an unchanged report sent again at once: %+v", again)
		}
		if k.retryDue("registry.invalid/gantry/wanted:1") {
			t.Error("a failed pre-pull is due again at once")
		}
		k.want([]string{image, "registry.invalid/gantry/wanted:1"})
		select {
		case <-k.kick:
			t.Error("the same wanted images, reordered, count as a change")
		default:
		}
		k.want(nil)
		select {
		case <-k.kick:
		default:
			t.Error("a change of the wanted images is not looked after at once")
		}
		k.look(context.Background())
		if r := k.report(); r == nil || len(r.Pulled) != 0 {
			t.Fatalf("report once nothing is wanted = %+v, want an empty list", r)
		}
	})
}
