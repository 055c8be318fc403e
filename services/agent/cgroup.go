package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Where it can, the agent runs each job in a cgroup v2 of its own, <own>/jobs/<attempt>,
// with the CPU (cpu.max) and memory (memory.max) its allocation holds; the cgroup also
// measures the job's CPU and takes down every process the job left, whatever its
// process group. Where it cannot (cgroup v1, controllers not delegated, a cgroup
// shared with other processes), jobs run without, and the agent says why once.

// cgroupFS is where cgroup v2 is mounted.
const cgroupFS = "/sys/fs/cgroup"

// cgroup2Magic is the file system type of a cgroup v2 mount (CGROUP2_SUPER_MAGIC).
const cgroup2Magic = 0x63677270

// agentCgroup is the leaf the agent moves into: a cgroup whose children have
// controllers may hold no process itself.
const agentCgroup = "agent"

// cgroupTree is the cgroup under which the agent puts its jobs.
type cgroupTree struct{ jobs string }

// setupCgroups makes room for jobs in the agent's own cgroup v2: it moves the agent
// into <own>/agent, enables the cpu and memory controllers for <own>'s children and
// creates <own>/jobs. It says why when it cannot.
func setupCgroups() (*cgroupTree, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(cgroupFS, &st); err != nil || st.Type != cgroup2Magic {
		return nil, fmt.Errorf("%s is not a cgroup v2 file system (this machine uses cgroup v1 or a hybrid layout)", cgroupFS)
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup(string(b))
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cgroupFS, own)
	if filepath.Base(own) == agentCgroup {
		base = filepath.Dir(base) // a restarted agent, or one started in its leaf already
	} else if err := moveSelf(base); err != nil {
		return nil, err
	}
	controllers, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if have := strings.Fields(string(controllers)); !slices.Contains(have, "cpu") || !slices.Contains(have, "memory") {
		return nil, fmt.Errorf("the cpu and memory controllers are not delegated to %s (it has %q)", base, strings.TrimSpace(string(controllers)))
	}
	jobs := filepath.Join(base, "jobs")
	if err := enableChildren(base); err != nil {
		return nil, err
	}
	if err := os.Mkdir(jobs, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := enableChildren(jobs); err != nil {
		return nil, err
	}
	return &cgroupTree{jobs: jobs}, nil
}

// enableChildren gives the children of dir the cpu and memory controllers.
func enableChildren(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644); err != nil {
		return fmt.Errorf("enable cpu and memory for the children of %s: %w", dir, err)
	}
	return nil
}

// ownCgroup returns the cgroup v2 path of /proc/self/cgroup's text.
func ownCgroup(text string) (string, error) {
	for _, line := range strings.Split(text, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, nil
		}
	}
	return "", errors.New("the agent is in no cgroup v2")
}

// moveSelf moves the agent into base/agent, when it is alone in base: other processes
// there are not the agent's to move.
func moveSelf(base string) error {
	b, err := os.ReadFile(filepath.Join(base, "cgroup.procs"))
	if err != nil {
		return err
	}
	me := strconv.Itoa(os.Getpid())
	for _, pid := range strings.Fields(string(b)) {
		if pid != me {
			return fmt.Errorf("other processes share the agent's cgroup %s: give the agent a cgroup of its own (with systemd, Delegate=yes)", base)
		}
	}
	leaf := filepath.Join(base, agentCgroup)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(me), 0o644)
}

// create makes the cgroup of one attempt with its limits: milli-CPUs as a quota per
// 100 ms period, memory in MiB (no swap beyond it); zero is no limit.
func (t *cgroupTree) create(name string, cpuMilli, memoryMiB int64) (string, error) {
	dir := filepath.Join(t.jobs, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	for file, v := range map[string]string{"cpu.max": cpuMax(cpuMilli), "memory.max": memoryMax(memoryMiB)} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("set %s of %s: %w", file, dir, err)
		}
	}
	// Without swap the memory limit holds; a kernel without swap accounting has no file.
	if memoryMiB > 0 {
		os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	}
	return dir, nil
}

func cpuMax(milli int64) string {
	if milli <= 0 {
		return "max 100000"
	}
	return strconv.FormatInt(milli*100, 10) + " 100000"
}

func memoryMax(mib int64) string {
	if mib <= 0 {
		return "max"
	}
	return strconv.FormatInt(mib<<20, 10)
}

// oomKills is how many of the cgroup's processes the kernel killed for memory.
func oomKills(dir string) int64 {
	f, err := os.Open(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
