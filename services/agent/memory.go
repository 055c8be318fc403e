package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// overLimitFile records why the agent stopped an attempt itself, for its exit report.
const overLimitFile = "stopped.json"

// memoryCheckEvery is how often GPU memory of shared GPUs is checked against the shares' limits.
const memoryCheckEvery = 2 * time.Second

// memoryLimits are, per GPU, the memory a share of it may use.
func memoryLimits(l agentapi.Lease) map[string]int64 {
	out := map[string]int64{}
	for _, d := range l.Devices {
		if d.MIGUUID == "" && d.Milli < 1000 && d.MemoryMiB > 0 {
			out[d.UUID] = d.MemoryMiB
		}
	}
	return out
}

// enforceMemory stops, every memoryCheckEvery, the attempts on a shared GPU whose
// processes hold more GPU memory than their share allows.
func (a *Agent) enforceMemory(ctx context.Context) {
	t := time.NewTicker(memoryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.checkMemory(ctx); err != nil {
			a.log.Warn("cannot check GPU memory of shared GPUs", "err", err)
		}
	}
}

// checkMemory compares each sharing attempt's GPU memory, summed over its processes
// (those of its process group, or of its container's cgroup), with its limit, and
// stops those over it.
func (a *Agent) checkMemory(ctx context.Context) error {
	a.mu.Lock()
	type watched struct {
		at     *attempt
		limits map[string]int64
	}
	var ws []watched
	for _, at := range a.attempts {
		if at.isFinished() {
			continue
		}
		var l agentapi.Lease
		if err := at.files.readJSON(leaseFile, &l); err != nil {
			continue
		}
		if lim := memoryLimits(l); len(lim) > 0 {
			ws = append(ws, watched{at: at, limits: lim})
		}
	}
	a.mu.Unlock()
	if len(ws) == 0 {
		return nil
	}
	procs, err := a.cfg.GPUs.ProcessMemory(ctx)
	if err != nil {
		return err
	}
	for _, w := range ws {
		job := w.at.files.jobPID()
		if job <= 0 {
			continue
		}
		owns := func(pid int) bool { return processGroup(pid) == job }
		if w.at.ctr != nil {
			cg := cgroupOf(job)
			owns = func(pid int) bool { return cg != "" && cgroupOf(pid) == cg }
		}
		used := map[string]int64{}
		for _, p := range procs {
			if p.UsedMiB != nil && owns(p.PID) {
				used[p.DeviceUUID] += *p.UsedMiB
			}
		}
		for uuid, limit := range w.limits {
			if used[uuid] > limit {
				why := fmt.Sprintf("stopped by the node: its processes held %d MiB of GPU memory on %s, over its share's limit of %d MiB", used[uuid], uuid, limit)
				a.log.Warn("attempt over its GPU memory limit", "job", w.at.ref.JobID, "attempt", w.at.ref.Attempt, "used_mib", used[uuid], "limit_mib", limit)
				w.at.stopOverLimit(why)
				break
			}
		}
	}
	return nil
}

// stopOverLimit records why the attempt is stopped and asks its supervisor to stop it.
func (at *attempt) stopOverLimit(why string) {
	if at.files.has(overLimitFile) {
		return
	}
	if b, err := json.Marshal(map[string]string{"reason": why}); err == nil {
		writeFileAtomic(at.files.path(overLimitFile), b, 0o644)
	}
	at.requestStop(agentapi.Stop{Reason: "memory", Message: why})
}

// overLimit returns why the agent stopped the attempt itself, or "".
func (f attemptFiles) overLimit() string {
	var v struct{ Reason string }
	if err := f.readJSON(overLimitFile, &v); err != nil {
		return ""
	}
	return v.Reason
}

// processGroup returns the process group of pid, 0 when it is gone.
func processGroup(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0
	}
	pgid, _ := strconv.Atoi(f[2])
	return pgid
}
