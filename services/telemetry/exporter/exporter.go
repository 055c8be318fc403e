package exporter

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gantry-gpu/gantry/services/store"
)

// Config tunes what a scrape reads. Zero fields take the defaults.
type Config struct {
	// Staleness is how old a GPU's newest sample may be and still be exported
	// (default 2 min); a GPU silent for longer disappears, as with dcgm-exporter.
	Staleness time.Duration
	// XIDWindow is how far back DCGM_FI_DEV_XID_ERRORS looks for the newest XID
	// (default 24 h, the default raw telemetry retention).
	XIDWindow time.Duration
	// ScrapeTimeout bounds the database reads of one scrape (default 10 s).
	ScrapeTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Staleness <= 0 {
		c.Staleness = 2 * time.Minute
	}
	if c.XIDWindow <= 0 {
		c.XIDWindow = 24 * time.Hour
	}
	if c.ScrapeTimeout <= 0 {
		c.ScrapeTimeout = 10 * time.Second
	}
	return c
}

// Exporter is the /metrics handler and the scheduling metrics' recorder. Its
// registry is its own: nothing is registered globally.
type Exporter struct {
	registry  *prometheus.Registry
	handler   http.Handler
	scheduler *schedulerMetrics
}

// New returns an Exporter reading st, with now as its clock.
func New(st *store.Store, now func() time.Time, cfg Config) *Exporter {
	cfg = cfg.withDefaults()
	reg := prometheus.NewRegistry()
	sched := newSchedulerMetrics()
	reg.MustRegister(
		newGPUCollector(st, now, cfg),
		newStateCollector(st, cfg),
		sched.cycle, sched.placements, sched.preemptions,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Exporter{
		registry:  reg,
		handler:   promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}),
		scheduler: sched,
	}
}

// ServeHTTP answers a scrape.
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.handler.ServeHTTP(w, r) }

// Registry is the exporter's registry, for a caller with metrics of its own.
func (e *Exporter) Registry() *prometheus.Registry { return e.registry }

// ObserveCycle records one scheduling cycle: how long it took, how many jobs it
// placed and how many it preempted. The dispatcher calls it after every cycle.
func (e *Exporter) ObserveCycle(took time.Duration, placements, preemptions int) {
	e.scheduler.observe(took, placements, preemptions)
}
