package advice

import (
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// JobHistory is what is known of one job for its hints.
type JobHistory struct {
	Job models.Job
	// GPU holds the job's device samples at one resolution (raw, 1-minute or 1-hour),
	// in any order.
	GPU []models.TelemetrySample
	// RawInterval is the agents' sampling interval, the width of a raw sample
	// (default 15 s).
	RawInterval time.Duration
	// DeviceMemoryMiB is the memory of each of the job's GPUs by UUID, for a job that
	// asked for no GPU memory explicitly.
	DeviceMemoryMiB map[string]int64
	// PowerLimitW is each GPU's power cap by UUID, where known; power throttling is
	// judged only for GPUs with one.
	PowerLimitW map[string]float64
	// CPU holds the job's CPU use in milli-cores (telemetry.MetricCPUMilli points).
	CPU []models.JobMetric
	// Events are the job's state changes, for restarts.
	Events []models.JobEvent
	// Now is when the hints are computed.
	Now time.Time
}

// width is how long a sample stands for.
func width(r *models.TelemetrySample, raw time.Duration) time.Duration {
	switch r.Resolution {
	case models.ResolutionMinute:
		return time.Minute
	case models.ResolutionHour:
		return time.Hour
	}
	if raw <= 0 {
		return 15 * time.Second
	}
	return raw
}

// byDevice groups samples per device UUID, each group in time order.
func byDevice(samples []models.TelemetrySample) (map[string][]models.TelemetrySample, []string) {
	groups := map[string][]models.TelemetrySample{}
	for _, s := range samples {
		groups[s.DeviceUUID] = append(groups[s.DeviceUUID], s)
	}
	uuids := make([]string, 0, len(groups))
	for uuid, g := range groups {
		sort.Slice(g, func(i, j int) bool { return g[i].At.Before(g[j].At) })
		uuids = append(uuids, uuid)
	}
	sort.Strings(uuids)
	return groups, uuids
}

// span is the time the samples cover, from the first start to the last end.
func span(samples []models.TelemetrySample, raw time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	first, last := samples[0].At, samples[0].At.Add(width(&samples[0], raw))
	for i := range samples {
		s := &samples[i]
		if s.At.Before(first) {
			first = s.At
		}
		if end := s.At.Add(width(s, raw)); end.After(last) {
			last = end
		}
	}
	return last.Sub(first)
}

// stretch is a run of consecutive samples of one device that all meet a condition.
type stretch struct {
	from, to time.Time
}

func (s stretch) length() time.Duration { return s.to.Sub(s.from) }

// longestStretch finds the longest run of consecutive samples (of one device, in time
// order) for which cond holds. A gap longer than two sample widths breaks a run:
// what happened in it is unknown.
func longestStretch(g []models.TelemetrySample, raw time.Duration, cond func(*models.TelemetrySample) bool) stretch {
	var best, cur stretch
	var prevEnd time.Time
	open := false
	for i := range g {
		s := &g[i]
		w := width(s, raw)
		if !cond(s) || (open && s.At.Sub(prevEnd) > 2*w) {
			open = false
		}
		if cond(s) {
			if !open {
				cur = stretch{from: s.At}
				open = true
			}
			cur.to = s.At.Add(w)
			if cur.length() > best.length() {
				best = cur
			}
		}
		prevEnd = s.At.Add(w)
	}
	return best
}

// trailingStretch is the run for which cond holds that reaches the newest sample, if any.
func trailingStretch(g []models.TelemetrySample, raw time.Duration, cond func(*models.TelemetrySample) bool) stretch {
	var cur stretch
	for i := len(g) - 1; i >= 0; i-- {
		s := &g[i]
		if !cond(s) {
			break
		}
		if i < len(g)-1 && g[i+1].At.Sub(s.At.Add(width(s, raw))) > 2*width(s, raw) {
			break
		}
		if cur.to.IsZero() {
			cur.to = s.At.Add(width(s, raw))
		}
		cur.from = s.At
	}
	return cur
}
