package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// Config holds the protocol's timings.
type Config struct {
	// NodeTimeout is how long a node may stay silent before it is marked lost.
	NodeTimeout time.Duration
	// HeartbeatInterval is how often agents are asked to heartbeat.
	HeartbeatInterval time.Duration
	// TickInterval is how often the loop runs when nothing wakes it.
	TickInterval time.Duration
	// LeaseRecheck is how often a waiting lease poll rereads the database, for
	// changes made by another server replica that cannot wake it directly.
	LeaseRecheck time.Duration
	// KillGrace is how long an agent waits between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// LogLimit is the most output kept of one stream (stdout or stderr) of one
	// replica of an attempt: a job that writes without end must not fill the
	// database. What comes after is taken and not kept, and the timeline says so.
	LogLimit int64
	// LogRetention is how long a job's output is kept after the job ends; 0 keeps it
	// for good. At least a day when set: an agent ships a job's last output moments
	// after its end, and none may arrive once the output was deleted.
	LogRetention time.Duration
}

// DefaultLogLimitMiB is Config.LogLimit unless told otherwise, in MiB.
const DefaultLogLimitMiB = 64

// DefaultConfig is what `gantry serve` uses unless told otherwise.
func DefaultConfig() Config {
	return Config{
		NodeTimeout:       30 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		TickInterval:      time.Second,
		LeaseRecheck:      2 * time.Second,
		KillGrace:         10 * time.Second,
		LogLimit:          DefaultLogLimitMiB << 20,
	}
}

// Validate refuses timings that cannot work together.
func (c Config) Validate() error {
	switch {
	case c.NodeTimeout <= 0 || c.HeartbeatInterval <= 0 || c.TickInterval <= 0 || c.LeaseRecheck <= 0 || c.KillGrace <= 0:
		return errors.New("dispatch timings must be positive")
	case c.LogLimit <= 0:
		return errors.New("the log limit must be positive")
	case c.LogRetention < 0 || c.LogRetention > 0 && c.LogRetention < MinLogRetention:
		return fmt.Errorf("the log retention %s must be 0 (kept for good) or at least %s", c.LogRetention, MinLogRetention)
	case c.HeartbeatInterval*2 > c.NodeTimeout:
		return fmt.Errorf("node timeout %s must be at least twice the heartbeat interval %s, or one late heartbeat loses a node", c.NodeTimeout, c.HeartbeatInterval)
	}
	return nil
}

// Errors callers tell apart with errors.Is.
var (
	// ErrUnauthorized: a wrong, expired, used or revoked join token or node credential.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrStaleAttempt: a report or log chunk of an attempt that is no longer current.
	ErrStaleAttempt = errors.New("stale attempt")
	// ErrFinished: the job already ended, so it cannot be cancelled.
	ErrFinished = errors.New("job already finished")
	// ErrOtherJob: a valid job token sent about another job than its own.
	ErrOtherJob = errors.New("the job token is not this job's")
	// ErrNoTelemetry: this server keeps no job metrics (a service built without telemetry).
	ErrNoTelemetry = errors.New("job metrics are not kept by this server")
)

// LogOffsetError says a log chunk starts past what the server holds, and where to resume.
type LogOffsetError struct{ Next int64 }

func (e *LogOffsetError) Error() string {
	return fmt.Sprintf("log chunk starts past the stored end %d: resend from there", e.Next)
}

// Service is the dispatch side of the control plane. It is safe for concurrent use.
type Service struct {
	store     *store.Store
	sched     Scheduler
	audit     *audit.Log
	telemetry TelemetrySink
	now       func() time.Time
	log       *slog.Logger
	cfg       Config
	started   time.Time
	kick      chan struct{}
	ended     chan struct{}
	nodes     *notifier
	usage     usageCache
	catalog   catalogCache
	inventory inventoryCache
}

// TelemetrySink checks what heartbeats report (GPU samples, jobs' CPU use) for the
// heartbeat's transaction to write, and stores the metrics jobs report;
// services/telemetry implements it.
type TelemetrySink interface {
	PrepareReport(ctx context.Context, now time.Time, sample *telemetry.NodeSample, usage []telemetry.SystemPoint) (telemetry.Report, error)
	RecordJobMetrics(ctx context.Context, now time.Time, job *models.Job, b telemetry.MetricBatch) (telemetry.MetricResult, error)
}

// Deps are what the service works with.
type Deps struct {
	Store     *store.Store
	Scheduler Scheduler
	// Audit records joins, refused agents, lost nodes and cancellations.
	Audit *audit.Log
	// Telemetry keeps the heartbeats' GPU samples and the jobs' metrics; nil drops
	// the samples and refuses the metrics.
	Telemetry TelemetrySink
	Now       func() time.Time
	Log       *slog.Logger
}

// New returns the dispatch service.
func New(d Deps, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dispatch config: %w", err)
	}
	if d.Store == nil || d.Scheduler == nil || d.Audit == nil || d.Now == nil || d.Log == nil {
		return nil, errors.New("dispatch needs a store, a scheduler, an audit log, a clock and a logger")
	}
	return &Service{
		store:     d.Store,
		sched:     d.Scheduler,
		audit:     d.Audit,
		telemetry: d.Telemetry,
		now:       d.Now,
		log:       d.Log,
		cfg:       cfg,
		started:   d.Now().UTC(),
		kick:      make(chan struct{}, 1),
		ended:     make(chan struct{}, 1),
		nodes:     newNotifier(),
	}, nil
}

// Kick asks the loop to run soon: a job was submitted or capacity was freed.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Ended receives soon after allocations that ran ended through this replica (an
// agent reported an exit, a node was lost or joined again), so that metering can
// charge them to their end at once rather than at its next round.
func (s *Service) Ended() <-chan struct{} { return s.ended }

func (s *Service) signalEnded() {
	select {
	case s.ended <- struct{}{}:
	default:
	}
}

// notifier wakes the lease polls of a node when its allocations change.
type notifier struct {
	mu    sync.Mutex
	chans map[int64]chan struct{}
}

func newNotifier() *notifier { return &notifier{chans: map[int64]chan struct{}{}} }

// watch returns a channel closed at the node's next change. Take it before reading
// the state it guards, so that a change in between is not missed.
func (n *notifier) watch(nodeID int64) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.chans[nodeID]
	if !ok {
		ch = make(chan struct{})
		n.chans[nodeID] = ch
	}
	return ch
}

func (n *notifier) notify(nodeIDs ...int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range nodeIDs {
		if ch, ok := n.chans[id]; ok {
			close(ch)
			delete(n.chans, id)
		}
	}
}

// asNode returns ctx with the request's actor named as node name.
func asNode(ctx context.Context, name string) context.Context {
	a := audit.ActorFrom(ctx)
	a.Name, a.Type = name, models.ActorNode
	return audit.WithActor(ctx, a)
}
