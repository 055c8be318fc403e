package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// schedulerMetrics are what the dispatcher reports; they live in the process that
// schedules (the leader).
type schedulerMetrics struct {
	cycle       prometheus.Histogram
	placements  prometheus.Counter
	preemptions prometheus.Counter
}

func newSchedulerMetrics() *schedulerMetrics {
	return &schedulerMetrics{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gantry_scheduler_cycle_seconds",
			Help:    "Time one scheduling cycle took, from snapshot to applied plan.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
		placements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gantry_scheduler_placements_total",
			Help: "Jobs the scheduler placed on nodes.",
		}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gantry_scheduler_preemptions_total",
			Help: "Jobs the scheduler preempted to make room for a higher class.",
		}),
	}
}

func (m *schedulerMetrics) observe(took time.Duration, placements, preemptions int) {
	m.cycle.Observe(took.Seconds())
	if placements > 0 {
		m.placements.Add(float64(placements))
	}
	if preemptions > 0 {
		m.preemptions.Add(float64(preemptions))
	}
}
