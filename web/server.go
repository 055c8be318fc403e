package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/static"
)

// Config is what the server is built from.
type Config struct {
	Store   *store.Store
	Version string
	Log     *slog.Logger
	// Dispatch runs jobs on nodes and speaks the agent protocol.
	Dispatch *dispatch.Service
}

// NewRouter builds the gin engine with the middleware chain and the route table.
func NewRouter(cfg Config) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true
	r.Use(requestID(), accessLog(cfg.Log), recovery(cfg.Log), securityHeaders())
	h := handlers.New(cfg.Store, cfg.Version, cfg.Log, handlers.Services{
		Dispatch: cfg.Dispatch,
		Jobs:     jobs.New(cfg.Store, audit.New(cfg.Store, time.Now), cfg.Dispatch),
	})
	for _, rt := range routes(h) {
		r.Handle(rt.method, rt.path, rt.handler)
	}
	r.StaticFS("/static", http.FS(static.FS))
	r.NoRoute(h.NotFound)
	return r
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
