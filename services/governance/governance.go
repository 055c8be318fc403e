package governance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// IdleSource measures idle GPU time from telemetry; *telemetry.Service implements it.
type IdleSource interface {
	JobIdleFor(ctx context.Context, job *models.Job, now, since time.Time, th advice.Thresholds) (time.Duration, error)
	ProjectsIdleMinutes(ctx context.Context, projectIDs []int64, from, to time.Time, th advice.Thresholds) (map[int64]store.GPUMinutes, error)
	JobsIdleMinutes(ctx context.Context, jobIDs []int64, from, to time.Time, th advice.Thresholds) (map[int64]store.GPUMinutes, error)
}

// Stopper asks dispatch to checkpoint and stop a running job through the agent's stop
// protocol (the grace period of its priority class). After CheckpointAndStop the job
// is held rather than requeued: releasing the hold (by hand, or by reverting the
// action) lets it resume from its checkpoint. After CheckpointAndRelease it goes back
// to the queue at once, its GPUs free for others meanwhile.
type Stopper interface {
	CheckpointAndStop(ctx context.Context, jobID int64, reason string) error
	CheckpointAndRelease(ctx context.Context, jobID int64, reason string) error
}

// Sender delivers one message through one channel; the context carries the deadline.
type Sender interface {
	Send(ctx context.Context, ch models.NotificationChannel, m Message) error
}

// Config tunes evaluation and delivery; zero fields take their defaults.
type Config struct {
	// IdleUtilPct is the GPU utilisation below which a GPU counts as idle. Default 5.
	IdleUtilPct float64
	// MinIdleGPUMinutes is the least GPU time a project needs before its idle rate
	// counts. Default 60.
	MinIdleGPUMinutes int64
	// BudgetBurnWindow is the burn-rate window of budget_threshold rules, which have
	// no window of their own (it shows in their evidence). Default 7 days.
	BudgetBurnWindow time.Duration
	// MaxAttempts is how often a notification is tried before it is reported failed. Default 8.
	MaxAttempts int
	// FirstRetry is the wait after the first failure, doubled each time up to MaxRetry.
	// Defaults 30 s and 1 h.
	FirstRetry, MaxRetry time.Duration
	// SendTimeout bounds one attempt. Default 10 s.
	SendTimeout time.Duration
	// PortalURL prefixes links to alerts in notifications, e.g. https://gantry.example.
	PortalURL string
	// MailRetention is how long an e-mail is kept after it was sent or given up on: it
	// holds a person's address and what was written to them. Default 30 days.
	MailRetention time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.IdleUtilPct == 0 {
		c.IdleUtilPct = 5
	}
	if c.MinIdleGPUMinutes == 0 {
		c.MinIdleGPUMinutes = 60
	}
	if c.BudgetBurnWindow == 0 {
		c.BudgetBurnWindow = 7 * 24 * time.Hour
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 8
	}
	if c.FirstRetry == 0 {
		c.FirstRetry = 30 * time.Second
	}
	if c.MaxRetry == 0 {
		c.MaxRetry = time.Hour
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.MailRetention == 0 {
		c.MailRetention = 30 * 24 * time.Hour
	}
	switch {
	case c.IdleUtilPct < 0 || c.IdleUtilPct > 100:
		return c, fmt.Errorf("governance: idle utilisation %.1f%% is not 0-100", c.IdleUtilPct)
	case c.MaxAttempts < 1 || c.FirstRetry < 0 || c.MaxRetry < c.FirstRetry || c.SendTimeout < 0 || c.MinIdleGPUMinutes < 0 || c.MailRetention < 0:
		return c, fmt.Errorf("governance: delivery settings must be positive, with the longest retry at least the first")
	}
	return c, nil
}

// Deps are what the service works with. Stopper may be nil: stop actions then fail
// with that reason recorded on the alert. Senders are keyed by channel kind.
type Deps struct {
	Store      *store.Store
	Accounting *accounting.Accounting
	Audit      *audit.Log
	Log        *slog.Logger
	Idle       IdleSource
	Stopper    Stopper
	Senders    map[string]Sender
	// Mailer e-mails people (a feedback item's author); nil: e-mail is not set up and
	// QueueMail queues nothing.
	Mailer Mailer
}

// Service evaluates rules, raises alerts, acts and notifies.
type Service struct {
	store   *store.Store
	acc     *accounting.Accounting
	audit   *audit.Log
	log     *slog.Logger
	idle    IdleSource
	stopper Stopper
	senders map[string]Sender
	mailer  Mailer
	cfg     Config
}

// New returns the governance service.
func New(d Deps, cfg Config) (*Service, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if d.Store == nil || d.Accounting == nil || d.Audit == nil || d.Log == nil || d.Idle == nil {
		return nil, fmt.Errorf("governance: store, accounting, audit log, logger and idle source are required")
	}
	return &Service{store: d.Store, acc: d.Accounting, audit: d.Audit, log: d.Log, idle: d.Idle,
		stopper: d.Stopper, senders: d.Senders, mailer: d.Mailer, cfg: c}, nil
}

func (s *Service) thresholds() advice.Thresholds {
	th := advice.DefaultThresholds()
	th.IdleUtilPct = s.cfg.IdleUtilPct
	return th
}
