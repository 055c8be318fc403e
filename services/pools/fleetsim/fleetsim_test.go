package fleetsim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/pools/fleetsim"
	"github.com/gantry-gpu/gantry/services/scheduler/tracebench"
)

var traceNodes = []tracebench.TraceNode{
	{Name: "a", CPUMilli: 32000, MemoryMiB: 128 << 10, GPUs: 2, Model: "T4"},
	{Name: "b", CPUMilli: 32000, MemoryMiB: 128 << 10, GPUs: 2, Model: "T4"},
	{Name: "c", CPUMilli: 96000, MemoryMiB: 512 << 10, GPUs: 8, Model: "V100M32"},
}

// pods is a day of arrivals: a burst of 1-GPU jobs in the morning, a quiet afternoon,
// an 8-GPU job at noon; every third job allows spot (BE).
func pods() []tracebench.TracePod {
	var out []tracebench.TracePod
	for i := range 30 {
		qos := "LS"
		if i%3 == 0 {
			qos = "BE"
		}
		start := int64(i) * 300
		out = append(out, tracebench.TracePod{Name: fmt.Sprintf("p%d", i), CPUMilli: 4000, MemoryMiB: 8192, Num: 1, Milli: 1000, QoS: qos,
			Created: start, Deleted: start + 3600})
	}
	out = append(out, tracebench.TracePod{Name: "big", CPUMilli: 32000, MemoryMiB: 65536, Num: 8, Milli: 1000, QoS: "BE", Created: 12 * 3600, Deleted: 14 * 3600})
	return out
}

func run(t *testing.T, mutate ...func(*fleetsim.Config)) fleetsim.Result {
	t.Helper()
	cfg := fleetsim.DefaultConfig()
	cfg.Speedup = 1
	for _, m := range mutate {
		m(&cfg)
	}
	res, err := fleetsim.Run(traceNodes, pods(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestElasticFleetsCostLessAndLoseNothing(t *testing.T) {
	res := run(t)
	for _, s := range []fleetsim.Scenario{res.Static, res.Autoscale, res.Spot} {
		if s.JobsLost != 0 || s.JobsDone != 31 {
			t.Fatalf("%s: %d done, %d lost", s.Name, s.JobsDone, s.JobsLost)
		}
		// 30 one-GPU hours and 16 GPU-hours of the big job ran in every fleet.
		if s.GPUHours != 46 {
			t.Fatalf("%s ran %.2f GPU-hours, want 46", s.Name, s.GPUHours)
		}
	}
	if !(res.Spot.CostMicros < res.Autoscale.CostMicros && res.Autoscale.CostMicros < res.Static.CostMicros) {
		t.Fatalf("costs static %d, autoscale %d, spot %d: want each elastic fleet cheaper", res.Static.CostMicros, res.Autoscale.CostMicros, res.Spot.CostMicros)
	}
	// The static fleet runs its peak all day: its cost is its nodes' price over the whole run.
	if res.Static.ProvisionedGPUHours < float64(res.Static.PeakNodes)*res.Static.SimulatedHours {
		t.Fatalf("static fleet paid %.1f GPU-hours for %d nodes over %.1f h", res.Static.ProvisionedGPUHours, res.Static.PeakNodes, res.Static.SimulatedHours)
	}
	if res.SavingsPct <= 0 || res.SavingsPct != roundPct(1-float64(res.Spot.CostMicros)/float64(res.Static.CostMicros)) {
		t.Fatalf("savings %.2f%%", res.SavingsPct)
	}
	// Waits come from booting machines, a couple of minutes, not from the queue.
	if res.Autoscale.P95QueueDelayS > 600 || res.Static.P95QueueDelayS > res.Autoscale.P95QueueDelayS {
		t.Fatalf("p95 waits: static %.0f s, autoscale %.0f s", res.Static.P95QueueDelayS, res.Autoscale.P95QueueDelayS)
	}
}

func roundPct(f float64) float64 { return float64(int64(f*10000+0.5)) / 100 }

// Frequent interruptions: every interrupted job resumes and finishes; none is lost, and
// jobs that do not allow spot are never interrupted.
func TestSpotInterruptionsAreSurvived(t *testing.T) {
	res := run(t, func(c *fleetsim.Config) { c.InterruptionRate = 2 })
	s := res.Spot
	if s.Interruptions == 0 || s.Survived != s.Interruptions || s.JobsLost != 0 {
		t.Fatalf("spot fleet: %d interruptions, %d survived, %d lost", s.Interruptions, s.Survived, s.JobsLost)
	}
	if res.Autoscale.Interruptions != 0 || res.Static.Interruptions != 0 {
		t.Fatal("on-demand fleets were interrupted")
	}
	again := run(t, func(c *fleetsim.Config) { c.InterruptionRate = 2 })
	if again.Spot != s {
		t.Fatalf("the same seed gave %+v, then %+v", s, again.Spot)
	}
}

// A job no machine type can hold is lost, and said so.
func TestUnplaceableJobsAreLost(t *testing.T) {
	cfg := fleetsim.DefaultConfig()
	cfg.Speedup, cfg.Step = 1, 10*time.Minute
	p := append(pods(), tracebench.TracePod{Name: "huge", CPUMilli: 1000, MemoryMiB: 1024, Num: 16, Milli: 1000, QoS: "LS", Created: 0, Deleted: 60})
	res, err := fleetsim.Run(traceNodes, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Autoscale.JobsLost != 1 || res.Spot.JobsLost != 1 || res.Static.JobsLost != 1 {
		t.Fatalf("lost: %d %d %d", res.Static.JobsLost, res.Autoscale.JobsLost, res.Spot.JobsLost)
	}
}

func TestBadConfig(t *testing.T) {
	for name, m := range map[string]func(*fleetsim.Config){
		"speedup":      func(c *fleetsim.Config) { c.Speedup = 0.5 },
		"spot ratio":   func(c *fleetsim.Config) { c.SpotRatio = 1.5 },
		"interruption": func(c *fleetsim.Config) { c.InterruptionRate = 100 },
		"step":         func(c *fleetsim.Config) { c.Step = 0 },
	} {
		cfg := fleetsim.DefaultConfig()
		m(&cfg)
		if _, err := fleetsim.Run(traceNodes, pods(), cfg); err == nil || !strings.Contains(err.Error(), strings.Fields(name)[0]) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
