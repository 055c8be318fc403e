package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

func TestParseStat(t *testing.T) {
	// A command name may hold spaces and parentheses.
	line := "4242 (my (odd) job) S 1 4240 4240 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 123 0 0"
	group, ticks, err := parseStat([]byte(line))
	if err != nil || group != 4240 || ticks != 310 {
		t.Fatalf("parseStat = group %d ticks %d, %v; want 4240 and 250+50+7+3", group, ticks, err)
	}
	if _, _, err := parseStat([]byte("12 (x) S 1")); err == nil {
		t.Error("a short stat line was accepted")
	}
}

// The meter reports each attempt's mean use between two readings, never below 0, and
// forgets attempts that are gone.
func TestUsageMeter(t *testing.T) {
	m := newUsageMeter()
	t0 := time.Unix(1000, 0)
	a, b := agentapi.AttemptRef{JobID: 1, Attempt: 1}, agentapi.AttemptRef{JobID: 2, Attempt: 1}
	if !m.due(t0, 15*time.Second) {
		t.Fatal("the first report is not due")
	}
	if got := m.report(t0, map[agentapi.AttemptRef]cpuReading{a: {usec: 0, at: t0}, b: {usec: 5e6, at: t0}}); len(got) != 0 {
		t.Fatalf("first readings reported %+v; they only set the start", got)
	}
	if m.due(t0.Add(7*time.Second), 15*time.Second) {
		t.Error("a report is due before its interval passed")
	}
	t1 := t0.Add(10 * time.Second)
	got := m.report(t1, map[agentapi.AttemptRef]cpuReading{a: {usec: 15e6, at: t1}, b: {usec: 1e6, at: t1}})
	want := map[agentapi.AttemptRef]int64{a: 1500, b: 0}
	if len(got) != 2 {
		t.Fatalf("report = %+v", got)
	}
	for _, u := range got {
		if u.CPUMilli != want[u.AttemptRef] {
			t.Errorf("%s used %d milli-CPU, want %d", u.AttemptRef, u.CPUMilli, want[u.AttemptRef])
		}
	}
	m.report(t1.Add(time.Second), map[agentapi.AttemptRef]cpuReading{a: {usec: 16e6, at: t1.Add(time.Second)}})
	if _, ok := m.last[b]; ok {
		t.Error("a finished attempt is still remembered")
	}
}

// A job that spins uses CPU; one that sleeps uses next to none: measured from its
// process group, as on a node without cgroup v2.
func TestCPUOfAttemptsMeasuresTheProcessGroup(t *testing.T) {
	ag := &Agent{attempts: map[agentapi.AttemptRef]*attempt{}}
	busy := runAttempt(t, farFence(t), nil, `sh -c 'while :; do :; done' & while :; do :; done`)
	idle := runAttempt(t, farFence(t), nil, `sleep 300`)
	refs := map[string]agentapi.AttemptRef{"busy": {JobID: 1, Attempt: 1}, "idle": {JobID: 2, Attempt: 1}}
	for name, f := range map[string]attemptFiles{"busy": busy, "idle": idle} {
		waitFile(t, f.path(pidFile))
		ag.attempts[refs[name]] = newAttempt(refs[name], f.dir, t.TempDir())
	}
	m := newUsageMeter()
	start := time.Now()
	m.report(start, ag.cpuOfAttempts(start))
	time.Sleep(1500 * time.Millisecond)
	end := time.Now()
	used := map[agentapi.AttemptRef]int64{}
	for _, u := range m.report(end, ag.cpuOfAttempts(end)) {
		used[u.AttemptRef] = u.CPUMilli
	}
	b, i := used[refs["busy"]], used[refs["idle"]]
	// On a loaded machine the spinning job gets less than its two cores: ask for a little.
	if b < 50 || b > int64(runtime.NumCPU())*1000+200 || i > 20 {
		t.Errorf("busy used %d milli-CPU, idle %d; want busy well above idle, within the machine's %d cores", b, i, runtime.NumCPU())
	}
}

func TestCgroupText(t *testing.T) {
	own, err := ownCgroup("12:memory:/x\n0::/system.slice/gantry-agent.service\n")
	if err != nil || own != "/system.slice/gantry-agent.service" {
		t.Errorf("ownCgroup = %q, %v", own, err)
	}
	if _, err := ownCgroup("4:memory:/x\n"); err == nil {
		t.Error("cgroup v1 only was taken for v2")
	}
	if cpuMax(2500) != "250000 100000" || cpuMax(0) != "max 100000" || memoryMax(64) != "67108864" || memoryMax(0) != "max" {
		t.Errorf("limits: cpu %q %q, memory %q %q", cpuMax(2500), cpuMax(0), memoryMax(64), memoryMax(0))
	}
}

// Where cgroup v2 is delegated to the agent, a job runs in a cgroup of its own with its
// limits, its CPU is read from there, and going past its memory kills it with a reason.
// Elsewhere (cgroup v1, a shared cgroup) the test says why it cannot run.
func TestJobsRunInACgroupWithTheirLimits(t *testing.T) {
	tree, err := setupCgroups()
	if err != nil {
		t.Skipf("cgroup v2 limits are not available here: %v", err)
	}
	cg, err := tree.create("test-"+strings.ReplaceAll(t.Name(), "/", "-"), 500, 64)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cg, "cpu.max")); strings.TrimSpace(string(b)) != "50000 100000" {
		t.Errorf("cpu.max = %q, want half a CPU", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cg, "memory.max")); strings.TrimSpace(string(b)) != "67108864" {
		t.Errorf("memory.max = %q, want 64 MiB", b)
	}
	f := attemptFiles{dir: t.TempDir()}
	if err := os.MkdirAll(f.path(workDir), 0o750); err != nil {
		t.Fatal(err)
	}
	// awk doubles a string until the kernel stops it; ulimit keeps it from the whole
	// machine should the cgroup not hold.
	spec := shimSpec{Command: []string{"/bin/sh", "-c", `cat /proc/self/cgroup; ulimit -v 1048576; exec awk 'BEGIN { s = "x"; while (length(s) < 536870912) s = s s }'`},
		Env: []string{"PATH=/usr/bin:/bin"}, WorkDir: f.path(workDir), Fence: farFence(t), Cgroup: cg, MemoryMiB: 64}
	if err := f.writeJSON(specFile, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := launchShim(testShim(), f); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, f)
	out := read(t, f.path(stdoutFile))
	if !strings.Contains(out, filepath.Base(cg)) {
		t.Errorf("the job ran in %q, not in its cgroup %s", out, cg)
	}
	if st.Signal != "SIGKILL" || !strings.Contains(st.Message, "memory limit of 64 MiB") {
		t.Errorf("over its memory: exit %+v, output %q; want killed with the reason", st, out)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("the attempt's cgroup is left behind: %v", err)
	}
}
