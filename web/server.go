package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/classes"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/exporter"
	"github.com/gantry-gpu/gantry/static"
)

// Config is what the server is built from.
type Config struct {
	Store   *store.Store
	Version string
	Log     *slog.Logger
	// Dispatch runs jobs on nodes and speaks the agent protocol.
	Dispatch *dispatch.Service
	// Auth tunes sign-in: bcrypt cost, session lifetimes, single sign-on. Zero: the defaults.
	Auth identity.Options
	// Now is the clock of sessions, tokens and the audit log; nil: time.Now.
	Now func() time.Time
	// TrustedProxies are the addresses (CIDRs) whose X-Forwarded-For names the client; none
	// by default, so that a client cannot pick the address its failed logins count against.
	TrustedProxies []string
	// SecureCookies marks cookies Secure on plain HTTP too: TLS ends at a proxy in front.
	SecureCookies bool
	// Metrics answers GET /metrics; nil: an exporter over Store, without the scheduling
	// metrics that only the exporter the dispatcher reports to has.
	Metrics http.Handler
	// Telemetry reads GPU history, job metrics and hints for the job pages; nil: one
	// over Store with the default retention.
	Telemetry *telemetry.Service
	// MetricsToken, when set, is what a scrape of /metrics must send as Authorization:
	// Bearer; empty: /metrics is public.
	MetricsToken string
	// Governance is the leader's rules service, with its channels' senders; nil: one
	// over Store that raises alerts on demand and leaves sending them to the leader.
	Governance *governance.Service
}

// NewRouter builds the gin engine with the middleware chain and the route table.
func NewRouter(cfg Config) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true
	if err := r.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		cfg.Log.Error("trusted proxies ignored", slog.Any("err", err))
	}
	r.Use(requestID(), accessLog(cfg.Log), recovery(cfg.Log), securityHeaders())
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	al := audit.New(cfg.Store, now)
	az := authz.New(cfg.Store, al)
	id := identity.New(cfg.Store, al, az, now, cfg.Auth)
	if cfg.Metrics == nil {
		cfg.Metrics = exporter.New(cfg.Store, now, exporter.Config{})
	}
	if cfg.Telemetry == nil {
		tel, err := telemetry.New(cfg.Store, telemetry.Config{})
		if err != nil {
			cfg.Log.Error("job telemetry is off", slog.Any("err", err))
		}
		cfg.Telemetry = tel
	}
	// A nil *dispatch.Service in an interface would not be a nil Stopper or Kicker.
	var stop directory.Stopper
	var kick jobs.Kicker
	var fit jobs.Fitter
	var fleet quotas.Fleet = cfg.Store
	if cfg.Dispatch != nil {
		stop, kick, fit, fleet = cfg.Dispatch, cfg.Dispatch, pools.NewFitCheck(cfg.Store, cfg.Dispatch), cfg.Dispatch
	}
	acc, gov, err := costServices(cfg, al)
	if err != nil {
		// The defaults are valid and every dependency is given: this is a bug, not input.
		panic(err)
	}
	js := jobs.New(cfg.Store, al, kick, fit)
	h := handlers.New(cfg.Store, cfg.Version, cfg.Log, handlers.Services{
		Dispatch:      cfg.Dispatch,
		Jobs:          js,
		Preview:       jobs.NewPreviewer(js, previewDeps(cfg, acc, now)),
		Identity:      id,
		Authz:         az,
		Audit:         al,
		Metrics:       cfg.Metrics,
		Images:        images.New(cfg.Store, al),
		Feedback:      feedback.New(cfg.Store, al, gov, now),
		Directory:     directory.New(cfg.Store, al, az, stop, now),
		Telemetry:     cfg.Telemetry,
		Quotas:        quotas.New(cfg.Store, al, fleet),
		Classes:       classes.New(cfg.Store, al),
		Accounting:    acc,
		Governance:    gov,
		SecureCookies: cfg.SecureCookies,
	})
	g := &gate{h: h, identity: id, authz: az, audit: al, store: cfg.Store, log: cfg.Log}
	if cfg.MetricsToken != "" {
		sum := sha256.Sum256([]byte(cfg.MetricsToken))
		g.metricsToken = sum[:]
	}
	for _, rt := range routes(h) {
		r.Handle(rt.method, rt.path, g.check(rt.access), rt.handler)
	}
	r.StaticFS("/static", http.FS(static.FS))
	r.NoRoute(g.signedInIfAny, h.NotFound)
	return r
}

// previewDeps are what the submit form's preview asks: the scheduler (when this server
// has dispatch), the rate cards and GPU history.
func previewDeps(cfg Config, acc *accounting.Accounting, now func() time.Time) jobs.PreviewDeps {
	d := jobs.PreviewDeps{Now: now, Prices: acc}
	if cfg.Dispatch != nil {
		d.Placements = cfg.Dispatch
	}
	if cfg.Telemetry != nil {
		d.History = cfg.Telemetry
	}
	return d
}

// costServices returns accounting over the store and the governance of cfg, or one
// built like the leader's over cfg's telemetry, without senders, stopping jobs through
// cfg's dispatch.
func costServices(cfg Config, al *audit.Log) (*accounting.Accounting, *governance.Service, error) {
	acc, err := accounting.New(cfg.Store, al, accounting.Config{})
	if err != nil || cfg.Governance != nil {
		return acc, cfg.Governance, err
	}
	if cfg.Telemetry == nil {
		return nil, nil, errors.New("governance needs telemetry, which is off")
	}
	deps := governance.Deps{Store: cfg.Store, Accounting: acc, Audit: al, Log: cfg.Log.With("component", "governance"), Idle: cfg.Telemetry}
	if cfg.Dispatch != nil {
		deps.Stopper = cfg.Dispatch
	}
	gov, err := governance.New(deps, governance.Config{})
	return acc, gov, err
}

// shutdownGrace bounds how long in-flight requests may finish after a stop signal.
const shutdownGrace = 10 * time.Second

// Serve answers on ln until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", slog.Duration("grace", shutdownGrace))
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
