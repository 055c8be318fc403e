package advice

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Hint kinds.
const (
	KindInputBound            = "input_bound"
	KindMemoryOverProvisioned = "memory_overprovisioned"
	KindGPUIdle               = "gpu_idle"
	KindThermalThrottling     = "thermal_throttling"
	KindPowerThrottling       = "power_throttling"
	KindFrequentRestarts      = "frequent_restarts"
)

// Hint is one piece of advice about a job, with the measurements behind it.
type Hint struct {
	Kind string
	// Device is the GPU the hint is about; empty for the whole job.
	Device string
	// Title says what is wrong in a few words; Evidence says what was measured and
	// what to do, in one or two sentences.
	Title    string
	Evidence string
}

// Thresholds decide when a hint fires. DefaultThresholds documents each.
type Thresholds struct {
	// Input-pipeline bound: mean GPU utilisation below InputBoundUtilPct while the
	// job's CPU use is at least CPUSaturated of its request, over MinSpan or more.
	InputBoundUtilPct float64
	CPUSaturated      float64
	// Memory over-provisioned: peak GPU memory below OverProvisioned of what each
	// GPU gives the job, over MemorySpan or more.
	OverProvisioned float64
	MemorySpan      time.Duration
	// GPU idle: utilisation below IdleUtilPct for IdleStretch without a break.
	IdleUtilPct float64
	IdleStretch time.Duration
	// Throttling: while at least BusyUtilPct busy, the SM clock below
	// ThrottledClock of its top, for ThrottleSpan or more in all, with the GPU at
	// ThermalC or hotter (thermal) or drawing PowerCapped of its cap (power).
	BusyUtilPct    float64
	ThrottledClock float64
	ThermalC       float64
	PowerCapped    float64
	ThrottleSpan   time.Duration
	// Frequent restarts: MaxRestarts or more requeues within RestartWindow.
	MaxRestarts   int
	RestartWindow time.Duration
	// MinSpan is the least history any utilisation-based hint needs.
	MinSpan time.Duration
}

// DefaultThresholds are the thresholds Gantry uses.
func DefaultThresholds() Thresholds {
	return Thresholds{
		InputBoundUtilPct: 50,
		CPUSaturated:      0.9,
		OverProvisioned:   0.5,
		MemorySpan:        30 * time.Minute,
		IdleUtilPct:       5,
		IdleStretch:       30 * time.Minute,
		BusyUtilPct:       80,
		ThrottledClock:    0.85,
		ThermalC:          85,
		PowerCapped:       0.97,
		ThrottleSpan:      10 * time.Minute,
		MaxRestarts:       3,
		RestartWindow:     24 * time.Hour,
		MinSpan:           10 * time.Minute,
	}
}

// Hints returns every hint that fires for h, whole-job hints first, then per GPU.
func Hints(h JobHistory, th Thresholds) []Hint {
	var out []Hint
	for _, f := range []func(JobHistory, Thresholds) []Hint{InputBound, MemoryOverProvisioned, FrequentRestarts, GPUIdle, Throttling} {
		out = append(out, f(h, th)...)
	}
	return out
}

// InputBound fires when the GPUs wait for data: low mean utilisation while the job's
// CPU is saturated.
func InputBound(h JobHistory, th Thresholds) []Hint {
	if h.Job.CPUMilli <= 0 || len(h.CPU) == 0 || span(h.GPU, h.RawInterval) < th.MinSpan {
		return nil
	}
	var utilSum float64
	var n int
	for _, s := range h.GPU {
		if s.Reported&models.ReportedUtil != 0 {
			utilSum += s.UtilPct * float64(max(s.Samples, 1))
			n += max(s.Samples, 1)
		}
	}
	if n == 0 {
		return nil
	}
	util := utilSum / float64(n)
	var cpu float64
	for _, m := range h.CPU {
		cpu += m.Value
	}
	cpu /= float64(len(h.CPU))
	saturation := cpu / float64(h.Job.CPUMilli)
	if util >= th.InputBoundUtilPct || saturation < th.CPUSaturated {
		return nil
	}
	return []Hint{{
		Kind:  KindInputBound,
		Title: "Input pipeline bound",
		Evidence: fmt.Sprintf("GPU utilisation averaged %.0f%% while the job's CPU ran at %.0f%% of the %s cores it asked for, over %s: "+
			"data loading cannot keep the GPU busy. Add data-loader workers, or ask for more CPU.",
			util, 100*saturation, cores(h.Job.CPUMilli), duration(span(h.GPU, h.RawInterval))),
	}}
}

// MemoryOverProvisioned fires when the job's peak GPU memory stays far below what
// each of its GPUs gives it.
func MemoryOverProvisioned(h JobHistory, th Thresholds) []Hint {
	if span(h.GPU, h.RawInterval) < th.MemorySpan {
		return nil
	}
	var peak, given int64
	seen := false
	for _, s := range h.GPU {
		if s.Reported&models.ReportedMemory == 0 {
			continue
		}
		seen = true
		peak = max(peak, s.MemMaxMiB)
		g := grantedMemory(h, s.DeviceUUID)
		if g > 0 && (given == 0 || g < given) {
			given = g
		}
	}
	if !seen || given == 0 || float64(peak) >= th.OverProvisioned*float64(given) {
		return nil
	}
	return []Hint{{
		Kind:  KindMemoryOverProvisioned,
		Title: "GPU memory over-provisioned",
		Evidence: fmt.Sprintf("GPU memory peaked at %s of the %s each GPU gives the job (%.0f%%) over %s: "+
			"a smaller GPU, a fraction or a MIG slice would do.",
			gib(peak), gib(given), 100*float64(peak)/float64(given), duration(span(h.GPU, h.RawInterval))),
	}}
}

// grantedMemory is the GPU memory the job may use on one device: what it asked for,
// else its share of the device.
func grantedMemory(h JobHistory, uuid string) int64 {
	if h.Job.GPUMemoryMiB > 0 {
		return h.Job.GPUMemoryMiB
	}
	mem := h.DeviceMemoryMiB[uuid]
	if h.Job.GPUMilli > 0 && h.Job.GPUMilli < 1000 {
		return mem * int64(h.Job.GPUMilli) / 1000
	}
	return mem
}

// GPUIdle fires for every GPU of the job that stayed near 0% for a long stretch.
func GPUIdle(h JobHistory, th Thresholds) []Hint {
	groups, uuids := byDevice(h.GPU)
	var out []Hint
	for _, uuid := range uuids {
		st := longestStretch(groups[uuid], h.RawInterval, func(s *models.TelemetrySample) bool {
			return s.Reported&models.ReportedUtil != 0 && s.UtilMaxPct < th.IdleUtilPct
		})
		if st.length() < th.IdleStretch {
			continue
		}
		out = append(out, Hint{
			Kind:   KindGPUIdle,
			Device: uuid,
			Title:  "GPU idle",
			Evidence: fmt.Sprintf("GPU %s stayed below %.0f%% utilisation for %s (%s to %s UTC) while the job held it: "+
				"release it, or check that the job uses it.",
				short(uuid), th.IdleUtilPct, duration(st.length()), st.from.UTC().Format("Jan 2 15:04"), st.to.UTC().Format("15:04")),
		})
	}
	return out
}

// IdleFor is how long the newest samples of the job's GPUs have all been below the
// idle threshold: 0 when any GPU is busy now. Governance's idle-job rule reads it.
func IdleFor(h JobHistory, th Thresholds) time.Duration {
	groups, uuids := byDevice(h.GPU)
	var idle time.Duration
	for i, uuid := range uuids {
		st := trailingStretch(groups[uuid], h.RawInterval, func(s *models.TelemetrySample) bool {
			return s.Reported&models.ReportedUtil != 0 && s.UtilMaxPct < th.IdleUtilPct
		})
		if i == 0 || st.length() < idle {
			idle = st.length()
		}
	}
	return idle
}

// Throttling fires for every GPU that ran busy at a clock well below its top while
// hot (thermal) or at its power cap (power).
func Throttling(h JobHistory, th Thresholds) []Hint {
	groups, uuids := byDevice(h.GPU)
	var out []Hint
	for _, uuid := range uuids {
		g := groups[uuid]
		var top int64
		for _, s := range g {
			if s.Reported&models.ReportedSMClock != 0 {
				top = max(top, s.SMClockMaxMHz)
			}
		}
		if top == 0 {
			continue
		}
		limit := h.PowerLimitW[uuid]
		var thermal, power time.Duration
		var clockSum, tempMax float64
		var n int
		for i := range g {
			s := &g[i]
			if s.Reported&models.ReportedUtil == 0 || s.Reported&models.ReportedSMClock == 0 || s.UtilPct < th.BusyUtilPct ||
				float64(s.SMClockMHz) >= th.ThrottledClock*float64(top) {
				continue
			}
			hot := s.Reported&models.ReportedTemperature != 0 && s.TempMaxC >= th.ThermalC
			capped := limit > 0 && s.Reported&models.ReportedPower != 0 && s.PowerMaxW >= th.PowerCapped*limit
			if hot {
				thermal += width(s, h.RawInterval)
			}
			if capped {
				power += width(s, h.RawInterval)
			}
			if hot || capped {
				clockSum += float64(s.SMClockMHz)
				tempMax = max(tempMax, s.TempMaxC)
				n++
			}
		}
		if n == 0 {
			continue
		}
		clock := clockSum / float64(n)
		if thermal >= th.ThrottleSpan {
			out = append(out, Hint{Kind: KindThermalThrottling, Device: uuid, Title: "Thermal throttling",
				Evidence: fmt.Sprintf("GPU %s ran at %.0f MHz, %.0f%% of its %d MHz top clock, for %s while at up to %.0f °C: "+
					"it slows down to cool off. Check the node's cooling and airflow.",
					short(uuid), clock, 100*clock/float64(top), top, duration(thermal), tempMax)})
		}
		if power >= th.ThrottleSpan {
			out = append(out, Hint{Kind: KindPowerThrottling, Device: uuid, Title: "Power throttling",
				Evidence: fmt.Sprintf("GPU %s ran at %.0f MHz, %.0f%% of its %d MHz top clock, for %s at its %.0f W power cap: "+
					"it slows down to stay under the cap. Raise the cap, or expect this speed.",
					short(uuid), clock, 100*clock/float64(top), top, duration(power), limit)})
		}
	}
	return out
}

// FrequentRestarts fires when the job went back to the queue from a start too often
// within the window before Now.
func FrequentRestarts(h JobHistory, th Thresholds) []Hint {
	since := h.Now.Add(-th.RestartWindow)
	reasons := map[string]int{}
	n := 0
	for _, e := range h.Events {
		if e.ToState != models.JobQueued || e.FromState == "" || e.FromState == models.JobHeld || e.CreatedAt.Before(since) {
			continue
		}
		n++
		r := e.Reason
		if r == "" {
			r = "no reason given"
		}
		reasons[r]++
	}
	if n < th.MaxRestarts {
		return nil
	}
	keys := make([]string, 0, len(reasons))
	for r := range reasons {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, r := range keys {
		parts[i] = fmt.Sprintf("%d× %s", reasons[r], r)
	}
	return []Hint{{
		Kind:  KindFrequentRestarts,
		Title: "Frequent restarts",
		Evidence: fmt.Sprintf("The job went back to the queue %d times in the last %s (%s): "+
			"each restart loses the work since its last checkpoint. Checkpoint more often, or look into the cause.",
			n, duration(th.RestartWindow), strings.Join(parts, ", ")),
	}}
}
