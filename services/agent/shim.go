package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files of an attempt directory that the shim reads or writes.
const (
	specFile   = "spec.json"
	pidFile    = "pid"
	exitFile   = "exit.json"
	stdoutFile = "stdout.log"
	stderrFile = "stderr.log"
)

// outputMode is the mode of what the job printed and of how it ended (exit.json keeps
// the runtime's message as it came): either may quote a secret value, so only the
// agent's user reads them, as the spec that holds the job's token.
const outputMode = 0o600

// shimSpec is what the agent asks a shim to run.
type shimSpec struct {
	Command []string `json:"command"`
	Env     []string `json:"env"`
	WorkDir string   `json:"work_dir"`
	// Fence is the lease file; the job is stopped when it runs out.
	Fence string `json:"fence"`
	// Cgroup is the cgroup v2 the job runs in, with its limits; empty for none.
	Cgroup    string `json:"cgroup,omitempty"`
	MemoryMiB int64  `json:"memory_mib,omitempty"`
	// Container is set on a docker or podman node: the job runs in it, and WorkDir
	// and Cgroup are not used.
	Container *containerSpec `json:"container,omitempty"`
}

// exitStatus is how an attempt ended, written by its shim.
type exitStatus struct {
	ExitCode int       `json:"exit_code"` // -1 when killed by a signal
	Signal   string    `json:"signal,omitempty"`
	Message  string    `json:"message,omitempty"`
	EndedAt  time.Time `json:"ended_at"`
}

// fencePoll is how often a shim reads its lease.
const fencePoll = 100 * time.Millisecond

// RunShim supervises one attempt: the main of `gantry agent shim DIR`. It runs the
// command of DIR/spec.json, in its own process group or in a container, with its
// output in DIR/stdout.log and DIR/stderr.log, stops it when the lease runs out,
// and writes DIR/exit.json when it ends. It returns the shim's own exit code.
func RunShim(dir string) int {
	// Catch, not ignore: an ignored signal would stay ignored in the job. Once the
	// job runs, the shim ignores them: it outlives whatever stops the agent.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	st, cleanup := superviseAttempt(dir, signals)
	b, err := json.Marshal(st)
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, exitFile), b, outputMode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry shim:", err)
		return 1
	}
	if cleanup != nil {
		cleanup()
	}
	return 0
}

// superviseAttempt runs the attempt of dir and returns how it ended, and what to
// clean up once that is recorded.
func superviseAttempt(dir string, signals <-chan os.Signal) (exitStatus, func()) {
	var spec shimSpec
	b, err := os.ReadFile(filepath.Join(dir, specFile))
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err == nil && len(spec.Command) == 0 {
		err = errors.New("empty command")
	}
	if err != nil {
		return failedStart(dir, 126, fmt.Sprintf("cannot start the command: read %s: %v", specFile, err)), nil
	}
	stdout, err := os.OpenFile(filepath.Join(dir, stdoutFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, outputMode)
	if err != nil {
		return failedStart(dir, 126, "cannot start the command: "+err.Error()), nil
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(dir, stderrFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, outputMode)
	if err != nil {
		return failedStart(dir, 126, "cannot start the command: "+err.Error()), nil
	}
	defer stderr.Close()
	if spec.Container != nil {
		return runContainer(dir, spec, stdout, stderr, signals)
	}
	return runProcess(dir, spec, stdout, stderr), nil
}

// runProcess runs the command in its own process group (and cgroup, when it has one).
func runProcess(dir string, spec shimSpec, stdout, stderr *os.File) exitStatus {
	// Look the command up on the job's PATH, not the shim's.
	for _, kv := range spec.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			os.Setenv("PATH", p)
		}
	}
	command := func() *exec.Cmd {
		cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = spec.WorkDir, spec.Env, stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	cmd, err := startInCgroup(command, spec.Cgroup)
	if err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return failedStart(dir, code, "cannot start the command: "+err.Error())
	}
	pid := cmd.Process.Pid
	if err := writeFileAtomic(filepath.Join(dir, pidFile), []byte(fmt.Sprintf("%d\n", pid)), 0o644); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	fenced := watchFence(spec.Fence, func(sig syscall.Signal) { syscall.Kill(-pid, sig) }, exited)
	// The job is its process group (and its cgroup): take down what it left behind.
	syscall.Kill(-pid, syscall.SIGKILL)
	st := exitStatus{ExitCode: cmd.ProcessState.ExitCode(), EndedAt: time.Now().UTC()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.ExitCode, st.Signal = -1, signalName(ws.Signal())
	}
	if fenced {
		st.Message = fencedMessage
	}
	if spec.Cgroup != "" {
		if st.ExitCode != 0 && oomKills(spec.Cgroup) > 0 {
			st.Message = fmt.Sprintf("the kernel killed the job's processes: they used more than the job's memory limit of %d MiB; ask for more memory", spec.MemoryMiB)
		}
		removeCgroup(spec.Cgroup)
	}
	return st
}

// fencedMessage is the exit message of a job its own node stopped.
const fencedMessage = "stopped by the node itself: its agent lost contact with the server, which will run the job elsewhere"

// startInCgroup starts the command made by command inside the cgroup dir (none when
// empty). Where the kernel cannot start a process into a cgroup (clone3, Linux 5.7),
// the job is moved there right after it started.
func startInCgroup(command func() *exec.Cmd, dir string) (*exec.Cmd, error) {
	cmd := command()
	if dir == "" {
		return cmd, cmd.Start()
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry shim: the job runs without its cgroup:", err)
		return cmd, cmd.Start()
	}
	defer syscall.Close(fd)
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	err = cmd.Start()
	if err == nil || errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return cmd, err
	}
	cmd = command()
	if err := cmd.Start(); err != nil {
		return cmd, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gantry shim: the job runs without its cgroup:", err)
	}
	return cmd, nil
}

// removeCgroup kills what is left in a job's cgroup, then removes it.
func removeCgroup(dir string) {
	// cgroup.kill (Linux 5.14) reaches processes that left the job's process group.
	os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644)
	for range 50 {
		if err := os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "gantry shim: cannot remove the job's cgroup", dir)
}

// watchFence waits until exited is closed, stopping the job through stop when the
// lease runs out: SIGTERM, then SIGKILL (sent again every second until the job is
// gone). It reports whether it had to.
func watchFence(fence string, stop func(syscall.Signal), exited <-chan struct{}) bool {
	t := time.NewTicker(fencePoll)
	defer t.Stop()
	fenced := false
	termSent := false
	var killedAt time.Time
	for {
		select {
		case <-exited:
			return fenced
		case <-t.C:
		}
		d, err := readFence(fence)
		now := time.Now()
		switch {
		case err != nil || !now.Before(d.kill):
			if now.Sub(killedAt) >= time.Second {
				stop(syscall.SIGKILL)
				killedAt = now
			}
			fenced = true
		case !now.Before(d.term) && !termSent:
			stop(syscall.SIGTERM)
			termSent, fenced = true, true
		}
	}
}

// failedStart records an attempt that could not start, in its stderr and its exit status.
func failedStart(dir string, code int, msg string) exitStatus {
	if f, ferr := os.OpenFile(filepath.Join(dir, stderrFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, outputMode); ferr == nil {
		fmt.Fprintln(f, "gantry:", msg)
		f.Close()
	}
	return exitStatus{ExitCode: code, Message: msg, EndedAt: time.Now().UTC()}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d", int(s))
}
