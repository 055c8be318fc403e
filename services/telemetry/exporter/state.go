package exporter

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// jobStates are exported even at zero, so that a dashboard never shows "no data"
// for a state that is merely empty.
var jobStates = []string{
	models.JobQueued, models.JobScheduled, models.JobRunning, models.JobPreempting, models.JobHeld,
	models.JobSucceeded, models.JobFailed, models.JobCancelled,
}

// stateCollector exports Gantry's own state, read from the store on every scrape.
type stateCollector struct {
	store *store.Store
	cfg   Config
	jobs  *prometheus.Desc
	queue *prometheus.Desc
	gpus  *prometheus.Desc
	total *prometheus.Desc
	cost  *prometheus.Desc
}

func newStateCollector(st *store.Store, cfg Config) *stateCollector {
	return &stateCollector{
		store: st,
		cfg:   cfg,
		jobs:  prometheus.NewDesc("gantry_jobs", "Jobs by state.", []string{"state"}, nil),
		queue: prometheus.NewDesc("gantry_queue_length", "Queued jobs by priority class and team.", []string{"class", "team"}, nil),
		gpus:  prometheus.NewDesc("gantry_gpus", "GPUs on nodes that are up, by whether Gantry's allocations hold them (fractions count in part), jobs submitted to a Slurm pool outside Gantry (outside-gantry), or nothing (idle).", []string{"state"}, nil),
		total: prometheus.NewDesc("gantry_gpus_total", "GPUs on nodes that are up (ready, draining or cordoned).", nil, nil),
		cost:  prometheus.NewDesc("gantry_cost_accrued_micros", "Cost accrued in the ledger, in micro-units of the rate cards' currency, by team.", []string{"team"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.queue, c.gpus, c.total, c.cost} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ScrapeTimeout)
	defer cancel()
	counts, err := c.store.JobCountsByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.jobs, err)
		return
	}
	for _, s := range jobStates {
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(counts[s]), s)
	}
	queues, err := c.store.QueueLengths(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.queue, err)
		return
	}
	for _, q := range queues {
		ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(q.Jobs), q.Class, q.Team)
	}
	capacity, err := c.store.GPUCapacity(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.gpus, err)
		return
	}
	allocated := float64(capacity.AllocatedMilli) / 1000
	foreign := float64(capacity.ForeignMilli) / 1000
	idle := float64(capacity.TotalMilli-capacity.AllocatedMilli-capacity.ForeignMilli) / 1000
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(capacity.TotalMilli)/1000)
	ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, allocated, "allocated")
	ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, foreign, "outside-gantry")
	ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, max(idle, 0), "idle")
	costs, err := c.store.CostAccruedByTeam(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.cost, fmt.Errorf("read accrued cost: %w", err))
		return
	}
	for _, t := range costs {
		ch <- prometheus.MustNewConstMetric(c.cost, prometheus.GaugeValue, float64(t.AmountMicros), t.Team)
	}
}
