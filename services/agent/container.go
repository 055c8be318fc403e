package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// On a docker or podman node each attempt runs in a container of its own, driven
// through the runtime's command line. The shim pulls the image when the node lacks
// it (within the pull timeout), runs the container attached with its output going
// to the attempt's files as a process's does, and asks the runtime for the exit
// code; the container keeps running when its shim or the agent dies, and the
// runtime remembers how it ended. Signals reach the job through `kill --signal`,
// and --init gives it an init that passes them on and reaps its children.

// Where the attempt's directories appear inside its container.
const (
	containerWork       = "/gantry/work"
	containerScratch    = "/gantry/scratch"
	containerCheckpoint = "/gantry/checkpoint"
)

// envFileName holds the job's environment for the runtime to read (it holds the job
// token: mode 0600, removed once the container runs).
const envFileName = "container.env"

// cliTimeout bounds one runtime command that should answer at once (inspect, kill, rm).
const cliTimeout = 30 * time.Second

// containerSpec is how the shim runs an attempt's container.
type containerSpec struct {
	Runtime       string   `json:"runtime"` // agentapi.RuntimeDocker or RuntimePodman
	CLI           string   `json:"cli"`     // the runtime's command
	Name          string   `json:"name"`
	Image         string   `json:"image"`
	Network       string   `json:"network"`
	PullTimeoutMS int64    `json:"pull_timeout_ms"`
	GPUs          []string `json:"gpus,omitempty"` // GPU or MIG UUIDs
	CPUMilli      int64    `json:"cpu_milli,omitempty"`
	MemoryMiB     int64    `json:"memory_mib,omitempty"`
	Mounts        []mount  `json:"mounts"`
	// Labels name the attempt, for `docker ps --filter label=gantry.job=7`.
	Labels map[string]string `json:"labels,omitempty"`
}

// mount is a host directory bound into the container, read-write.
type mount struct {
	Host      string `json:"host"`
	Container string `json:"container"`
}

// containerName names the container of the attempt in dir: the attempt, and a digest
// of its directory, so that agents sharing one runtime (several on one host, or a
// test's) never collide.
func containerName(ref agentapi.AttemptRef, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return fmt.Sprintf("gantry-j%d-a%d-r%d-%s", ref.JobID, ref.Attempt, ref.Replica, hex.EncodeToString(sum[:4]))
}

// runArgs is the runtime's `run` command line for the attempt: attached (the shim
// holds its output), no signal proxy (signals go through `kill`), an init, the
// image as pulled (never pulled again here), the job's command in place of the
// image's entrypoint, its limits, GPUs, directories and environment file.
func runArgs(c containerSpec, envFile string, command []string) []string {
	args := []string{"run", "--name", c.Name, "--sig-proxy=false", "--init", "--pull", "never",
		"--network", c.Network, "--workdir", containerWork, "--env-file", envFile}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		args = append(args, "--label", k+"="+c.Labels[k])
	}
	for _, m := range c.Mounts {
		args = append(args, "--volume", m.Host+":"+m.Container)
	}
	if c.CPUMilli > 0 {
		args = append(args, "--cpus", cpus(c.CPUMilli))
	}
	if c.MemoryMiB > 0 {
		// The same as the memory limit: no swap beyond it.
		mem := strconv.FormatInt(c.MemoryMiB, 10) + "m"
		args = append(args, "--memory", mem, "--memory-swap", mem)
	}
	args = append(args, gpuArgs(c.Runtime, c.GPUs)...)
	if len(command) > 0 {
		args = append(args, "--entrypoint", command[0], c.Image)
		return append(args, command[1:]...)
	}
	return append(args, c.Image)
}

// gpuArgs select the job's GPUs: docker's --gpus through the NVIDIA container
// toolkit (a list of devices is quoted, as its CSV syntax wants), podman's CDI
// devices (a CDI spec naming the GPUs by UUID: `nvidia-ctk cdi generate
// --device-name-strategy=uuid`).
func gpuArgs(runtime string, uuids []string) []string {
	if len(uuids) == 0 {
		return nil
	}
	if runtime == agentapi.RuntimeDocker {
		return []string{"--gpus", `"device=` + strings.Join(uuids, ",") + `"`}
	}
	var out []string
	for _, u := range uuids {
		out = append(out, "--device", "nvidia.com/gpu="+u)
	}
	return out
}

// cpus writes milli-CPUs as the runtimes' --cpus wants them: 1500 is "1.500".
func cpus(milli int64) string {
	return fmt.Sprintf("%d.%03d", milli/1000, milli%1000)
}

// envFileText is the environment as an env file: one KEY=VALUE per line, taken
// literally by both runtimes. A value holding a line break cannot be written so.
func envFileText(env []string) ([]byte, error) {
	var b bytes.Buffer
	for _, kv := range env {
		if strings.ContainsAny(kv, "\n\x00") {
			name, _, _ := strings.Cut(kv, "=")
			return nil, fmt.Errorf("the job's variable %s holds a line break, which a container's environment file cannot carry: pass it in a file instead", name)
		}
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// containerState is what the runtime's inspect says of a container (docker and
// podman name these fields alike).
type containerState struct {
	Status     string
	Running    bool
	OOMKilled  bool
	Pid        int
	ExitCode   int
	Error      string
	FinishedAt time.Time
}

// parseState reads `inspect --format '{{json .State}}'`.
func parseState(out []byte) (*containerState, error) {
	var st containerState
	if err := json.Unmarshal(bytes.TrimSpace(out), &st); err != nil {
		return nil, fmt.Errorf("read the container's state %q: %w", clip(string(out), 200), err)
	}
	if st.Status == "" {
		return nil, fmt.Errorf("read the container's state %q: no status", clip(string(out), 200))
	}
	return &st, nil
}

// noSuchObject reports whether a runtime's error says the container or image does
// not exist: docker says "No such container"/"No such object"/"No such image",
// podman "no such container"/"no such object"/"image not known".
func noSuchObject(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "no such container") || strings.Contains(s, "no such object") ||
		strings.Contains(s, "no such image") || strings.Contains(s, "image not known")
}

// notRunning reports whether a runtime's error to `kill` says the container had
// already stopped: docker "is not running", podman "can only kill running containers".
func notRunning(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "is not running") || strings.Contains(s, "can only kill running containers")
}

// containerExit is the exit status of a container that ended. Container runtimes
// report a job killed by signal n as 128+n; the signal is named beside the code.
func containerExit(st *containerState, memoryMiB int64) exitStatus {
	out := exitStatus{ExitCode: st.ExitCode, EndedAt: st.FinishedAt.UTC()}
	if out.EndedAt.IsZero() || out.EndedAt.Year() < 2000 {
		out.EndedAt = time.Now().UTC()
	}
	if st.ExitCode > 128 && st.ExitCode < 128+32 {
		out.Signal = signalName(syscall.Signal(st.ExitCode - 128))
	}
	switch {
	case st.OOMKilled:
		out.Message = fmt.Sprintf("the kernel killed the job's processes: they used more than the job's memory limit of %d MiB; ask for more memory", memoryMiB)
	case st.Error != "":
		out.Message = "the container runtime says: " + clip(st.Error, 500)
	}
	return out
}

// containerCLI drives a container runtime through its command line.
type containerCLI struct {
	runtime string // agentapi.RuntimeDocker or RuntimePodman
	path    string
}

// newContainerCLI finds the runtime's command: path, or the runtime's name on PATH.
func newContainerCLI(runtime, path string) (*containerCLI, error) {
	if path == "" {
		path = runtime
	}
	found, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("--runtime %s needs the %s command: install it or give its path with --container-cli: %w", runtime, runtime, err)
	}
	return &containerCLI{runtime: runtime, path: found}, nil
}

// cliError is a runtime command that failed, with what it said.
type cliError struct {
	args   []string
	code   int
	stderr string
}

func (e *cliError) Error() string {
	msg := lastLine(e.stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.code)
	}
	return fmt.Sprintf("%s %s: %s", filepath.Base(e.args[0]), e.args[1], msg)
}

// run runs one runtime command and returns its standard output.
func (c *containerCLI) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s %s: %w", c.runtime, args[0], context.Cause(ctx))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), &cliError{args: append([]string{c.path}, args...), code: ee.ExitCode(), stderr: stderr.String()}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.runtime, args[0], err)
	}
	return stdout.Bytes(), nil
}

// check asks the runtime whether it can run containers (docker: its daemon answers;
// podman: its storage and configuration load) and returns its version.
func (c *containerCLI) check(ctx context.Context) (string, error) {
	args := []string{"info", "--format", "{{.Version.Version}}"}
	if c.runtime == agentapi.RuntimeDocker {
		args = []string{"version", "--format", "{{.Server.Version}}"}
	}
	out, err := c.run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("--runtime %s cannot run containers: %w", c.runtime, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// state returns the container's state, nil when the runtime has no such container.
func (c *containerCLI) state(ctx context.Context, name string) (*containerState, error) {
	out, err := c.run(ctx, "inspect", "--type", "container", "--format", "{{json .State}}", name)
	var ce *cliError
	if errors.As(err, &ce) && noSuchObject(ce.stderr) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseState(out)
}

// hasImage reports whether the runtime holds the image.
func (c *containerCLI) hasImage(ctx context.Context, ref string) (bool, error) {
	_, err := c.run(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	var ce *cliError
	if errors.As(err, &ce) && noSuchObject(ce.stderr) {
		return false, nil
	}
	return err == nil, err
}

// pull pulls the image, within timeout.
func (c *containerCLI) pull(ctx context.Context, ref string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("it did not finish within the pull timeout of %s", timeout))
	defer cancel()
	_, err := c.run(ctx, "pull", "--quiet", ref)
	return err
}

// kill sends sig to the container's init, which passes it on to the job. A
// container that has stopped, or is gone, is no error.
func (c *containerCLI) kill(ctx context.Context, name string, sig syscall.Signal) error {
	_, err := c.run(ctx, "kill", "--signal", signalName(sig), name)
	var ce *cliError
	if errors.As(err, &ce) && (notRunning(ce.stderr) || noSuchObject(ce.stderr)) {
		return nil
	}
	return err
}

// remove removes the container, running or not; a missing one is no error.
func (c *containerCLI) remove(ctx context.Context, name string) error {
	_, err := c.run(ctx, "rm", "--force", name)
	var ce *cliError
	if errors.As(err, &ce) && noSuchObject(ce.stderr) {
		return nil
	}
	return err
}

// wait waits until the container stops.
func (c *containerCLI) wait(ctx context.Context, name string) error {
	_, err := c.run(ctx, "wait", name)
	return err
}

// lastLine is the last line of text that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// pidCgroupCPU reads the CPU the cgroup of pid has used, in microseconds: cgroup v2's
// cpu.stat (on the unified mount of a hybrid layout too), else cgroup v1's cpuacct.
func pidCgroupCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	var v2, cpuacct string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpuacct" {
				cpuacct = parts[2]
			}
		}
	}
	if cpuacct != "" {
		for _, mnt := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
			if b, err := os.ReadFile(filepath.Join(cgroupFS, mnt, cpuacct, "cpuacct.usage")); err == nil {
				ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				return ns / 1000, err
			}
		}
	}
	if v2 != "" {
		for _, mnt := range []string{cgroupFS, filepath.Join(cgroupFS, "unified")} {
			if usec, err := cgroupCPU(filepath.Join(mnt, v2)); err == nil {
				return usec, nil
			}
		}
	}
	return 0, fmt.Errorf("no CPU accounting for the cgroup of process %d", pid)
}

// cgroupOf is the text of /proc/<pid>/cgroup: two processes with the same text
// share every cgroup. Empty when pid is gone.
func cgroupOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	return string(b)
}
