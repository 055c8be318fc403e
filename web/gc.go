package web

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// ServeGCPercent is the collector's target while serving, where the operator has not
// set GOGC. A server's live heap is small beside what its requests allocate (a jobs
// page ~30 KB), so at Go's default of 100 it collects every few hundred pages and
// marking and sweeping were ~15% of a page's CPU (docs/jobs-list-benchmark.md, session
// 21). At 400 the heap may grow to five times what is live before a collection.
const ServeGCPercent = 400

// ServeMemoryShare is the share of its cgroup's memory limit that a server's heap is
// held to (a soft limit: the collector runs more often near it), where the operator has
// not set GOMEMLIMIT: the heap that ServeGCPercent lets grow stays inside its container.
const ServeMemoryShare = 0.9

// CgroupMemoryMax is where cgroup v2 says how much memory the process's group may use.
const CgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// GCSetting is what TuneGC set, for the log: a GC percent and a memory limit in bytes,
// each 0 where it left the runtime's (the operator's GOGC or GOMEMLIMIT, or none).
type GCSetting struct {
	Percent     int
	MemoryLimit int64
}

func (s GCSetting) String() string {
	percent, limit := "GOGC as set", "none"
	if s.Percent != 0 {
		percent = "GOGC=" + strconv.Itoa(s.Percent)
	}
	if s.MemoryLimit != 0 {
		limit = fmt.Sprintf("%d MiB", s.MemoryLimit>>20)
	}
	return percent + ", memory limit " + limit
}

// TuneGC sets the garbage collector for serving: ServeGCPercent unless GOGC is set, and
// a memory limit of ServeMemoryShare of the cgroup's (read from memoryMax) unless
// GOMEMLIMIT is set or the group has none. restore puts back what was there, for tests
// and benchmarks that share their process. A memoryMax that cannot be read or parsed
// sets no limit: outside a container there is none to keep to.
func TuneGC(getenv func(string) string, memoryMax string) (set GCSetting, restore func()) {
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)
	if getenv("GOGC") == "" {
		set.Percent = ServeGCPercent
		debug.SetGCPercent(ServeGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		if max, ok := cgroupLimit(memoryMax); ok {
			set.MemoryLimit = int64(float64(max) * ServeMemoryShare)
			debug.SetMemoryLimit(set.MemoryLimit)
		}
	}
	return set, func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// cgroupLimit reads a cgroup v2 memory.max: a number of bytes, or "max" for none.
func cgroupLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
