package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// shimArg marks the test binary started as the job supervisor: the agent starts it
// as `<test binary> shimArg DIR`. An argument, not an environment variable, which
// every child would inherit (the workers of `go test -fuzz` too).
const shimArg = "gantry-agent-test-shim"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == shimArg {
		os.Exit(RunShim(os.Args[2]))
	}
	os.Exit(m.Run())
}

func testShim() []string { return []string{os.Args[0], shimArg} }

// runAttempt prepares an attempt directory for script, starts its shim, and
// returns its files. fence is the lease file the shim watches.
func runAttempt(t *testing.T, fence string, env []string, script string) attemptFiles {
	t.Helper()
	f := attemptFiles{dir: t.TempDir()}
	if err := os.MkdirAll(f.path(workDir), 0o750); err != nil {
		t.Fatal(err)
	}
	spec := shimSpec{Command: []string{"/bin/sh", "-c", script}, Env: append(env, "PATH=/usr/bin:/bin"), WorkDir: f.path(workDir), Fence: fence}
	if err := f.writeJSON(specFile, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := launchShim(testShim(), f); err != nil {
		t.Fatal(err)
	}
	endShimAtCleanup(t, f, func() {
		if f.signal(syscall.SIGKILL) != nil {
			syscall.Kill(readPID(f.path(shimPIDFile)), syscall.SIGKILL)
		}
	})
	return f
}

// endShimAtCleanup stops what is left of the attempt with stop and waits for its shim
// to end before the test's TempDirs go: a shim writes its exit status as its job
// dies, and removing the directory while it writes fails the test ("directory not
// empty").
func endShimAtCleanup(t *testing.T, f attemptFiles, stop func()) {
	t.Cleanup(func() {
		if !f.shimAlive() {
			return
		}
		stop()
		for deadline := time.Now().Add(30 * time.Second); f.shimAlive(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("the supervisor of %s did not end", f.dir)
				return
			}
		}
	})
}

// farFence is a lease file that will not run out during a test.
func farFence(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := writeFence(dir, fenceFor(time.Now(), time.Hour)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, fenceFile)
}

// waitExit waits for the attempt's exit status; the limit only stops a broken test.
func waitExit(t *testing.T, f attemptFiles) *exitStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := f.exit()
		if err != nil {
			t.Fatal(err)
		}
		if st != nil {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the attempt did not end")
	return nil
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

// waitRunning waits until the job has written its first output and the shim has
// recorded its pid: the job may print before the shim writes the pid file.
func waitRunning(t *testing.T, f attemptFiles) {
	t.Helper()
	waitFile(t, f.path(stdoutFile))
	waitFile(t, f.path(pidFile))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestShimRecordsOutputAndExitCode(t *testing.T) {
	f := runAttempt(t, farFence(t), []string{"GREETING=hello"}, `echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`)
	st := waitExit(t, f)
	if st.ExitCode != 3 || st.Signal != "" {
		t.Fatalf("exit = %+v, want code 3", st)
	}
	if got := read(t, f.path(stdoutFile)); got != "hello from "+f.path(workDir)+"\n" {
		t.Errorf("stdout = %q", got)
	}
	if got := read(t, f.path(stderrFile)); got != "oops\n" {
		t.Errorf("stderr = %q", got)
	}
	if f.jobPID() <= 0 {
		t.Error("no job pid recorded")
	}
	// What the job printed and how it ended may quote a secret: only the agent's user reads them.
	for _, name := range []string{stdoutFile, stderrFile, exitFile} {
		if fi, err := os.Stat(f.path(name)); err != nil || fi.Mode().Perm() != outputMode {
			t.Errorf("%s: %v, %v; want mode %o", name, fi.Mode().Perm(), err, outputMode)
		}
	}
}

func TestShimReportsACommandThatCannotStart(t *testing.T) {
	f := attemptFiles{dir: t.TempDir()}
	spec := shimSpec{Command: []string{"no-such-program-gantry"}, Env: []string{"PATH=/usr/bin:/bin"}, WorkDir: f.dir, Fence: farFence(t)}
	if err := f.writeJSON(specFile, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := launchShim(testShim(), f); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, f)
	if st.ExitCode != 127 || !strings.Contains(st.Message, "executable file not found") {
		t.Fatalf("exit = %+v, want 127 and why", st)
	}
	if got := read(t, f.path(stderrFile)); !strings.Contains(got, "gantry: cannot start the command") {
		t.Errorf("stderr = %q", got)
	}
}

// What the job leaves running in its process group dies with it.
func TestShimKillsTheJobsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	f := runAttempt(t, farFence(t), nil, `sleep 300 & echo $! > `+dir+`/child; exit 0`)
	if st := waitExit(t, f); st.ExitCode != 0 {
		t.Fatalf("exit = %+v", st)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(waitFile(t, dir+"/child")))
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("background child %d outlived its job", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A shim whose lease runs out stops its job: SIGTERM first, SIGKILL for a job
// that ignores it.
func TestShimFencesWhenTheLeaseRunsOut(t *testing.T) {
	fenceDir := t.TempDir()
	fence := filepath.Join(fenceDir, fenceFile)
	if err := writeFence(fenceDir, fenceFor(time.Now(), time.Hour)); err != nil {
		t.Fatal(err)
	}
	polite := runAttempt(t, fence, nil, `sleep 300`)
	stubborn := runAttempt(t, fence, nil, `trap "" TERM; echo ready; while true; do sleep 0.05; done`)
	waitFile(t, polite.path(pidFile))
	waitFile(t, stubborn.path(stdoutFile))
	now := time.Now()
	if err := writeFence(fenceDir, fenceDeadlines{term: now, kill: now.Add(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for f, sig := range map[attemptFiles]string{polite: "SIGTERM", stubborn: "SIGKILL"} {
		st := waitExit(t, f)
		if st.Signal != sig || st.ExitCode != -1 || !strings.Contains(st.Message, "lost contact with the server") {
			t.Errorf("fenced %s = %+v, want killed by %s", f.dir, st, sig)
		}
	}
	// A missing lease counts as run out.
	os.Remove(fence)
	st := waitExit(t, runAttempt(t, fence, nil, `sleep 300`))
	if st.Signal != "SIGKILL" {
		t.Errorf("job without a lease = %+v, want killed", st)
	}
}

func TestJobEnvironment(t *testing.T) {
	t.Setenv("GANTRY_JOIN_TOKEN", "gjt_secret")
	l := agentapi.Lease{
		AttemptRef: agentapi.AttemptRef{JobID: 7, Attempt: 2, Replica: 1}, JobName: "train",
		Env:       map[string]string{"EPOCHS": "3", "PATH": "/opt/conda/bin:/usr/bin"},
		SecretEnv: map[string]string{"HF_TOKEN": "hf_x"},
		Devices:   []agentapi.Device{{UUID: "GPU-a", Milli: 1000}, {UUID: "GPU-c", MIGUUID: "MIG-b", MIGProfile: "3g.40gb"}},
	}
	env := jobEnv(l, jobContext{work: "/w", scratch: "/s", checkpoints: "/c", server: "http://gantry:8080", token: "gjb_job"})
	for _, want := range []string{
		"GANTRY_JOB_ID=7", "GANTRY_ATTEMPT=2", "GANTRY_REPLICA=1", "GANTRY_JOB_NAME=train",
		"GANTRY_SERVER=http://gantry:8080", "GANTRY_JOB_TOKEN=gjb_job",
		"GANTRY_CHECKPOINT_DIR=/c", "GANTRY_CHECKPOINT_REQUEST_FILE=/c/" + CheckpointRequestFile, "GANTRY_SCRATCH_DIR=/s",
		"CUDA_VISIBLE_DEVICES=GPU-a,MIG-b", "NVIDIA_VISIBLE_DEVICES=GPU-a,MIG-b",
		"EPOCHS=3", "HF_TOKEN=hf_x", "PATH=/opt/conda/bin:/usr/bin", "HOME=/w", "TMPDIR=/s",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("job env lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GANTRY_JOIN_TOKEN") {
			t.Errorf("the agent's secret leaked into the job: %s", kv)
		}
	}
	none := jobEnv(agentapi.Lease{Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0", "GANTRY_JOB_TOKEN": "forged"}}, jobContext{work: "/w", token: "gjb_job"})
	if !slices.Contains(none, "CUDA_VISIBLE_DEVICES=") || !slices.Contains(none, "NVIDIA_VISIBLE_DEVICES=void") {
		t.Errorf("a job without GPUs must see none: %v", none)
	}
	if !slices.Contains(none, "GANTRY_JOB_TOKEN=gjb_job") {
		t.Errorf("the job's own variables overrode its token: %v", none)
	}
}

// The stop protocol asks for a checkpoint (a request file and SIGUSR1); a job that
// saves one and exits is done before SIGTERM.
func TestStopProtocolAsksForACheckpoint(t *testing.T) {
	ckpt := t.TempDir()
	ag := &Agent{}
	ag.killGraceNS.Store(int64(time.Minute))
	f := runAttempt(t, farFence(t), nil, `trap 'cat `+ckpt+`/`+CheckpointRequestFile+` > `+ckpt+`/saved; exit 0' USR1; echo ready; while true; do sleep 0.05; done`)
	waitRunning(t, f)
	at := newAttempt(agentapi.AttemptRef{JobID: 1, Attempt: 1}, f.dir, ckpt)
	var p stopProtocol
	p.begin(agentapi.Stop{Reason: agentapi.StopPreempt, GraceMS: 60000}, ag, at, discard())
	if p.phase != 1 {
		t.Fatalf("phase after begin = %d, want checkpointing", p.phase)
	}
	st := waitExit(t, f)
	if st.ExitCode != 0 {
		t.Fatalf("exit = %+v, want a clean exit after the checkpoint", st)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(read(t, ckpt+"/saved")), &req); err != nil || req["reason"] != agentapi.StopPreempt {
		t.Fatalf("checkpoint request = %v, %v", req, err)
	}
}

// Without a grace (a cancel) the job gets SIGTERM, and SIGKILL after the kill grace.
func TestStopProtocolTerminatesThenKills(t *testing.T) {
	ag := &Agent{}
	ag.killGraceNS.Store(int64(200 * time.Millisecond))
	f := runAttempt(t, farFence(t), nil, `trap "" TERM; echo ready; while true; do sleep 0.05; done`)
	waitRunning(t, f)
	at := newAttempt(agentapi.AttemptRef{JobID: 1, Attempt: 1}, f.dir, t.TempDir())
	var p stopProtocol
	p.begin(agentapi.Stop{Reason: agentapi.StopCancel}, ag, at, discard())
	for p.phase != 3 {
		p.advance(ag, at, discard())
		time.Sleep(20 * time.Millisecond)
	}
	if st := waitExit(t, f); st.Signal != "SIGKILL" {
		t.Fatalf("exit = %+v, want SIGKILL after the ignored SIGTERM", st)
	}
}

// A job that said through the API that it saved its checkpoint (the lease's stop
// says so) gets SIGTERM at once, not at the end of the grace; the newer stop request
// replaces one the supervisor has not taken yet.
func TestStopProtocolMovesOnWhenTheCheckpointIsSaved(t *testing.T) {
	ag := &Agent{}
	ag.killGraceNS.Store(int64(time.Minute))
	ckpt := t.TempDir()
	f := runAttempt(t, farFence(t), nil, `trap 'echo usr1' USR1; trap 'echo term; exit 0' TERM; echo ready; while true; do sleep 0.05; done`)
	waitRunning(t, f)
	at := newAttempt(agentapi.AttemptRef{JobID: 1, Attempt: 1}, f.dir, ckpt)
	stop := agentapi.Stop{Reason: agentapi.StopPreempt, GraceMS: int64(time.Hour / time.Millisecond)}
	at.requestStop(stop)
	var p stopProtocol
	p.begin(<-at.stops, ag, at, discard())
	p.advance(ag, at, discard())
	if p.phase != 1 {
		t.Fatalf("phase within the grace = %d, want checkpointing", p.phase)
	}
	at.requestStop(stop)
	stop.CheckpointSaved = true
	at.requestStop(stop)
	p.begin(<-at.stops, ag, at, discard())
	p.advance(ag, at, discard())
	if p.phase != 2 {
		t.Fatalf("phase after the job saved its checkpoint = %d, want terminated", p.phase)
	}
	if st := waitExit(t, f); st.ExitCode != 0 || !strings.Contains(read(t, f.path(stdoutFile)), "term") {
		t.Fatalf("exit = %+v, output %q; want a clean exit on SIGTERM", st, read(t, f.path(stdoutFile)))
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A job on a share of a GPU that holds more GPU memory than its share allows is
// stopped, and its exit says why.
func TestMemoryLimitStopsAShare(t *testing.T) {
	sim, err := gpu.NewSimulated("1xA100-80GB", "node", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := sim.Discover(context.Background())
	uuid := inv.Devices[0].UUID
	ag := &Agent{cfg: Config{GPUs: sim}, log: discard(), attempts: map[agentapi.AttemptRef]*attempt{}}
	ag.killGraceNS.Store(int64(200 * time.Millisecond))
	f := runAttempt(t, farFence(t), nil, `echo ready; sleep 300`)
	waitRunning(t, f)
	lease := agentapi.Lease{AttemptRef: agentapi.AttemptRef{JobID: 1, Attempt: 1}, Devices: []agentapi.Device{{UUID: uuid, Milli: 500, MemoryMiB: 1000}}}
	if err := f.writeJSON(leaseFile, lease); err != nil {
		t.Fatal(err)
	}
	if env := jobEnv(lease, jobContext{work: "/w", scratch: "/s", checkpoints: "/c"}); !slices.Contains(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1000M") {
		t.Errorf("a share's job env lacks its MPS memory limit: %v", env)
	}
	at := newAttempt(lease.AttemptRef, f.dir, t.TempDir())
	ag.attempts[at.ref] = at
	pid := f.jobPID()
	if err := sim.SetProcessMemory(uuid, pid, 900); err != nil {
		t.Fatal(err)
	}
	if err := ag.checkMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-at.stops:
		t.Fatalf("stopped within its limit: %+v", s)
	default:
	}
	if err := sim.SetProcessMemory(uuid, pid, 1200); err != nil {
		t.Fatal(err)
	}
	if err := ag.checkMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	var s agentapi.Stop
	select {
	case s = <-at.stops:
	default:
		t.Fatal("an attempt over its GPU memory limit was not stopped")
	}
	var p stopProtocol
	p.begin(s, ag, at, discard())
	for p.phase < 2 {
		p.advance(ag, at, discard())
	}
	if st := waitExit(t, f); st.Signal != "SIGTERM" {
		t.Fatalf("exit = %+v", st)
	}
	if why := f.overLimit(); !strings.Contains(why, "held 1200 MiB of GPU memory on "+uuid+", over its share's limit of 1000 MiB") {
		t.Fatalf("recorded reason = %q", why)
	}
}
