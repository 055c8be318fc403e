package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// usageBeats is how many heartbeats apart the agent reports its jobs' CPU use (15 s
// at the default interval): often enough for the input-bound hint, rarely enough
// that a long job's history stays small.
const usageBeats = 3

// clockTicks is USER_HZ, the unit of CPU times in /proc/<pid>/stat: 100 on every Linux
// architecture Gantry runs on (reading sysconf would need cgo).
const clockTicks = 100

// cpuReading is the CPU an attempt had used, in microseconds, at a time.
type cpuReading struct {
	usec int64
	at   time.Time
}

// usageMeter turns cumulative CPU readings into each attempt's mean use since its
// previous report. The heartbeat loop alone uses it.
type usageMeter struct {
	last     map[agentapi.AttemptRef]cpuReading
	reported time.Time
}

func newUsageMeter() *usageMeter { return &usageMeter{last: map[agentapi.AttemptRef]cpuReading{}} }

// due reports whether a report is due at now, reports being every apart.
func (m *usageMeter) due(now time.Time, every time.Duration) bool {
	return now.Sub(m.reported) >= every
}

// report returns the mean CPU use of each attempt read since its previous reading,
// and forgets attempts no longer read. An attempt's first reading only sets its start.
func (m *usageMeter) report(now time.Time, readings map[agentapi.AttemptRef]cpuReading) []agentapi.JobUsage {
	m.reported = now
	var out []agentapi.JobUsage
	for ref, r := range readings {
		prev, ok := m.last[ref]
		m.last[ref] = r
		if !ok || !r.at.After(prev.at) {
			continue
		}
		// A process that exited without its time reaching a waiting parent takes its
		// time away: never report less than nothing.
		used := max(r.usec-prev.usec, 0)
		out = append(out, agentapi.JobUsage{AttemptRef: ref, CPUMilli: used * 1000 / r.at.Sub(prev.at).Microseconds()})
	}
	for ref := range m.last {
		if _, ok := readings[ref]; !ok {
			delete(m.last, ref)
		}
	}
	return out
}

// cpuOfAttempts reads the CPU each running attempt has used: from its cgroup when it
// has one (exact, exited processes included; a container's is its init's), else
// summed over its process group.
func (a *Agent) cpuOfAttempts(now time.Time) map[agentapi.AttemptRef]cpuReading {
	a.mu.Lock()
	type running struct {
		ref       agentapi.AttemptRef
		group     int
		cgroup    string
		container bool
	}
	var rs []running
	for ref, at := range a.attempts {
		if at.isFinished() {
			continue
		}
		if pid := at.files.jobPID(); pid > 0 {
			rs = append(rs, running{ref: ref, group: pid, cgroup: at.cgroup, container: at.ctr != nil})
		}
	}
	a.mu.Unlock()
	out := map[agentapi.AttemptRef]cpuReading{}
	var groups map[int]int64
	for _, r := range rs {
		if r.container {
			if usec, err := pidCgroupCPU(r.group); err == nil {
				out[r.ref] = cpuReading{usec: usec, at: now}
			}
			continue
		}
		if r.cgroup != "" {
			if usec, err := cgroupCPU(r.cgroup); err == nil {
				out[r.ref] = cpuReading{usec: usec, at: now}
				continue
			}
		}
		if groups == nil {
			groups = groupCPU()
		}
		if ticks, ok := groups[r.group]; ok {
			out[r.ref] = cpuReading{usec: ticks * 1e6 / clockTicks, at: now}
		}
	}
	return out
}

// groupCPU sums, per process group, the CPU its processes used and that of their
// children they waited for, in clock ticks, from /proc.
func groupCPU() map[int]int64 {
	out := map[int]int64{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it exited meanwhile
		}
		if group, ticks, err := parseStat(b); err == nil {
			out[group] += ticks
		}
	}
	return out
}

// parseStat reads the process group and utime+stime+cutime+cstime of /proc/<pid>/stat.
func parseStat(b []byte) (group int, ticks int64, err error) {
	// The command name is in parentheses and may hold anything: count fields after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, errors.New("too few fields")
	}
	if group, err = strconv.Atoi(f[2]); err != nil {
		return 0, 0, fmt.Errorf("process group: %w", err)
	}
	for _, k := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("field %d: %w", k+3, err)
		}
		ticks += v
	}
	return group, ticks, nil
}

// cgroupCPU reads usage_usec of a cgroup v2's cpu.stat.
func cgroupCPU(dir string) (int64, error) {
	f, err := os.Open(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "usage_usec "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
}
