package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// Files of an attempt directory that only the agent uses.
const (
	leaseFile    = "lease.json"   // the lease as received, to re-attach after a restart
	shimPIDFile  = "shim.pid"     // the supervisor, to tell whether it still runs
	shippedFile  = "shipped.json" // how much of each stream the server holds
	startedFile  = "started"      // marker: the server knows the attempt started
	finishedFile = "finished"     // marker: nothing more to tell the server
	workDir      = "work"
	scratchDir   = "scratch"
	// CheckpointRequestFile is written into GANTRY_CHECKPOINT_DIR when the job should save a checkpoint.
	CheckpointRequestFile = ".gantry-checkpoint-request"
)

// attemptDirName names the directory of one attempt under <data>/attempts.
func attemptDirName(ref agentapi.AttemptRef) string {
	return fmt.Sprintf("j%d-a%d-r%d", ref.JobID, ref.Attempt, ref.Replica)
}

// attemptFiles reads and writes the files of one attempt directory.
type attemptFiles struct{ dir string }

func (f attemptFiles) path(name string) string { return filepath.Join(f.dir, name) }

func (f attemptFiles) has(name string) bool {
	_, err := os.Stat(f.path(name))
	return err == nil
}

func (f attemptFiles) mark(name string) error { return writeFileAtomic(f.path(name), nil, 0o644) }

func (f attemptFiles) readJSON(name string, v any) error {
	b, err := os.ReadFile(f.path(name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (f attemptFiles) writeJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(f.path(name), b, 0o644)
}

// writeSecretJSON writes a file that holds a secret (the job token): only the
// agent's user may read it.
func (f attemptFiles) writeSecretJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(f.path(name), b, 0o600)
}

// exit returns the attempt's exit status, or nil while it runs.
func (f attemptFiles) exit() (*exitStatus, error) {
	var st exitStatus
	err := f.readJSON(exitFile, &st)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read exit status: %w", err)
	}
	return &st, nil
}

// jobPID returns the pid of the job's process (its process group), 0 before the shim wrote it.
func (f attemptFiles) jobPID() int {
	return readPID(f.path(pidFile))
}

// shimAlive reports whether the attempt's supervisor still runs. The pid is only
// trusted when its command line names this attempt, so a reused pid is not mistaken.
func (f attemptFiles) shimAlive() bool {
	pid := readPID(f.path(shimPIDFile))
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), f.dir)
}

// signal sends sig to the job's process group.
func (f attemptFiles) signal(sig syscall.Signal) error {
	pid := f.jobPID()
	if pid <= 0 {
		return errors.New("the job has no pid yet")
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal job group %d: %w", pid, err)
	}
	return nil
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// launchShim starts the supervisor of the attempt in its own session, so that it
// and the job survive the agent. It returns once the shim runs; reaped reports
// when it exits, for a shim that is the agent's own child.
func launchShim(shim []string, f attemptFiles) (reaped <-chan struct{}, err error) {
	log, err := os.OpenFile(f.path("shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	defer log.Close()
	args := append(append([]string{}, shim[1:]...), f.dir)
	cmd := exec.Command(shim[0], args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start supervisor %s: %w", shim[0], err)
	}
	if err := writeFileAtomic(f.path(shimPIDFile), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	return done, nil
}
