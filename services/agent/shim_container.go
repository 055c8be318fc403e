package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// containerPoll is how often the shim asks the runtime whether the container runs yet.
const containerPoll = 100 * time.Millisecond

// runContainer runs the attempt in its container: it pulls the image when the node
// lacks it, runs the container attached with its output in the attempt's files,
// and reads how it ended from the runtime. Until the container is launched, a
// signal to the shim (the agent stopping an attempt that has not started) ends the
// start; after, the container runs first and the agent stops it through the stop
// protocol, so that a job is never killed unseen at the instant of its start. A
// lease that runs out ends the start until the container runs. The cleanup removes
// the container once its exit is recorded.
func runContainer(dir string, spec shimSpec, stdout, stderr *os.File, signals <-chan os.Signal) (exitStatus, func()) {
	c := *spec.Container
	cli := &containerCLI{runtime: c.Runtime, path: c.CLI}
	if c.Image == "" {
		return failedStart(dir, 125, fmt.Sprintf("this node runs jobs in %s containers and the job names no image: give the job an image, or run it on a node whose agent has --runtime process", c.Runtime)), nil
	}
	envFile := filepath.Join(dir, envFileName)
	text, err := envFileText(spec.Env)
	if err == nil {
		err = writeFileAtomic(envFile, text, 0o600)
	}
	if err != nil {
		return failedStart(dir, 125, "cannot start the container: "+err.Error()), nil
	}
	defer os.Remove(envFile)

	ctx, stopStart := context.WithCancelCause(context.Background())
	defer stopStart(nil)
	gate := &startGate{ctx: ctx, stop: stopStart}
	started := make(chan struct{})
	markStarted := sync.OnceFunc(func() { close(started) })
	defer markStarted()
	go watchStart(ctx, spec.Fence, signals, started, gate)

	if err := pullIfMissing(ctx, cli, c, stderr); err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return stoppedBeforeStart(cause), nil
		}
		return failedStart(dir, 125, fmt.Sprintf("cannot pull image %s: %v", c.Image, err)), nil
	}
	if cause := gate.launch(); cause != nil {
		return stoppedBeforeStart(cause), nil
	}
	cleanup := func() {
		rctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		if err := cli.remove(rctx, c.Name); err != nil {
			fmt.Fprintln(os.Stderr, "gantry shim: cannot remove the container:", err)
		}
	}
	from := fileSize(stderr)
	run := exec.Command(c.CLI, runArgs(c, envFile, spec.Command)...)
	run.Stdout, run.Stderr = stdout, stderr
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// What the runtime leaves in its working directory (podman's conmon writes an
	// "oom" file there) stays with the attempt.
	run.Dir = dir
	if err := run.Start(); err != nil {
		return failedStart(dir, 126, fmt.Sprintf("cannot start the container: %v", err)), nil
	}
	exited := make(chan struct{})
	go func() {
		run.Wait()
		close(exited)
	}()
	// The attempt has started once the runtime gives the container's process.
	if cause := awaitRunning(ctx, cli, c.Name, dir, exited); cause != nil {
		cleanup()
		<-exited
		return stoppedBeforeStart(cause), nil
	}
	markStarted()
	os.Remove(envFile)
	stop := func(sig syscall.Signal) {
		kctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		cli.kill(kctx, c.Name, sig)
	}
	fenced := false
	for {
		fenced = watchFence(spec.Fence, stop, exited) || fenced
		st, err := stateNow(cli, c.Name)
		if err != nil || st == nil || !st.Running {
			break
		}
		// Its runtime command ended (killed) while the container runs: wait on the
		// runtime instead, under the same lease.
		exited = make(chan struct{})
		go func(done chan struct{}) {
			cli.wait(context.Background(), c.Name)
			close(done)
		}(exited)
	}
	st, err := stateNow(cli, c.Name)
	var out exitStatus
	switch {
	case err == nil && st != nil && (st.Status == "exited" || st.Status == "stopped"):
		out = containerExit(st, c.MemoryMiB)
	default:
		// The runtime could not make or start the container: its own words are the
		// last line it wrote.
		code := run.ProcessState.ExitCode()
		if code <= 0 {
			code = 125
		}
		why := lastLine(readFrom(stderr.Name(), from))
		if why == "" && err != nil {
			why = err.Error()
		}
		out = exitStatus{ExitCode: code, Message: "the container runtime could not run the job: " + clip(why, 500), EndedAt: time.Now().UTC()}
	}
	if fenced {
		out.Message = fencedMessage
	}
	return out, cleanup
}

// startGate decides whether a signal to the shim still ends the start: it does
// until the container is launched, never after.
type startGate struct {
	ctx  context.Context
	stop context.CancelCauseFunc

	mu       sync.Mutex
	launched bool
}

// stopBy ends the start with cause unless the container was launched.
func (g *startGate) stopBy(cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.launched {
		g.stop(cause)
	}
}

// launch lets the container be launched, unless the start was stopped: then it
// returns why.
func (g *startGate) launch() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cause := context.Cause(g.ctx); cause != nil {
		return cause
	}
	g.launched = true
	return nil
}

// watchStart ends the start on a signal to the shim (until the container is
// launched) or a lease that runs out, until started is closed.
func watchStart(ctx context.Context, fence string, signals <-chan os.Signal, started <-chan struct{}, gate *startGate) {
	t := time.NewTicker(fencePoll)
	defer t.Stop()
	for {
		select {
		case <-started:
			return
		case <-ctx.Done():
			return
		case s := <-signals:
			name := s.String()
			if sig, ok := s.(syscall.Signal); ok {
				name = signalName(sig)
			}
			gate.stopBy(fmt.Errorf("stopped by %s before its container started", name))
		case <-t.C:
			if d, err := readFence(fence); err != nil || !time.Now().Before(d.term) {
				gate.stop(errors.New("stopped by the node itself before its container started: its agent lost contact with the server"))
				return
			}
		}
	}
}

// pullIfMissing pulls the image unless the runtime holds it, saying so in the job's stderr.
func pullIfMissing(ctx context.Context, cli *containerCLI, c containerSpec, stderr *os.File) error {
	ictx, cancel := context.WithTimeout(ctx, cliTimeout)
	has, err := cli.hasImage(ictx, c.Image)
	cancel()
	if err != nil || has {
		return err
	}
	fmt.Fprintf(stderr, "gantry: pulling image %s\n", c.Image)
	began := time.Now()
	if err := cli.pull(ctx, c.Image, time.Duration(c.PullTimeoutMS)*time.Millisecond); err != nil {
		fmt.Fprintf(stderr, "gantry: cannot pull image %s: %v\n", c.Image, err)
		return err
	}
	fmt.Fprintf(stderr, "gantry: pulled image %s in %s\n", c.Image, time.Since(began).Round(time.Millisecond))
	return nil
}

// awaitRunning waits until the container runs and records its process as the job's
// pid, or its runtime command ended (it could not start, or ended at once). It
// returns the cause when the start was stopped meanwhile.
func awaitRunning(ctx context.Context, cli *containerCLI, name, dir string, exited <-chan struct{}) error {
	t := time.NewTicker(containerPoll)
	defer t.Stop()
	for {
		select {
		case <-exited:
			return nil
		case <-t.C:
		}
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
		st, err := stateNow(cli, name)
		if err != nil || st == nil || !st.Running || st.Pid <= 0 {
			continue
		}
		if err := writeFileAtomic(filepath.Join(dir, pidFile), []byte(strconv.Itoa(st.Pid)+"\n"), 0o644); err != nil {
			return err
		}
		return nil
	}
}

func stateNow(cli *containerCLI, name string) (*containerState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	return cli.state(ctx, name)
}

// stoppedBeforeStart is the exit of an attempt stopped while its image was pulled
// or its container was starting.
func stoppedBeforeStart(cause error) exitStatus {
	return exitStatus{ExitCode: -1, Signal: "SIGTERM", Message: cause.Error(), EndedAt: time.Now().UTC()}
}

func fileSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom reads a file from offset, at most 64 KiB.
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := f.ReadAt(buf, offset)
	return string(buf[:n])
}
