package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/web"
)

// e2eServerEnv makes the test binary an e2e control plane: the router, dispatch
// and scheduler of `gantry serve`, with short timings. Its
// value is the JSON of e2eServerConfig.
const e2eServerEnv = "GANTRY_E2E_SERVER"

type e2eServerConfig struct {
	DataDir string
	Addr    string
	// Autoscale runs the pools autoscaler with e2eAutoscale's short timings.
	Autoscale bool
	// NodeTimeout, when set, replaces e2eTimings' NodeTimeout.
	NodeTimeout time.Duration
}

// e2eTimings are short so that a node is lost within seconds.
var e2eTimings = dispatch.Config{
	NodeTimeout:       4 * time.Second,
	HeartbeatInterval: 250 * time.Millisecond,
	TickInterval:      100 * time.Millisecond,
	LeaseRecheck:      200 * time.Millisecond,
	KillGrace:         2 * time.Second,
	LogLimit:          dispatch.DefaultLogLimitMiB << 20,
}

// e2eServerMain runs the control plane until SIGTERM (or SIGKILL, which is the point).
func e2eServerMain(raw string) int {
	var cfg e2eServerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "e2e server:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := runE2EServer(ctx, cfg, log); err != nil {
		log.Error("e2e server failed", "err", err)
		return 1
	}
	return 0
}

func runE2EServer(ctx context.Context, cfg e2eServerConfig, log *slog.Logger) error {
	st, err := store.Open(ctx, store.Config{DataDir: cfg.DataDir})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	tel, err := telemetry.New(st, telemetry.Config{})
	if err != nil {
		return err
	}
	core, err := configuredScheduler(ctx, st)
	if err != nil {
		return err
	}
	timings := e2eTimings
	if cfg.NodeTimeout > 0 {
		timings.NodeTimeout = cfg.NodeTimeout
	}
	d, err := dispatch.New(dispatch.Deps{
		Store: st, Scheduler: dispatch.NewPlacer(core), Audit: audit.New(st, time.Now), Telemetry: tel, Now: time.Now, Log: log,
	}, timings)
	if err != nil {
		return err
	}
	if cfg.Autoscale {
		loop, err := e2eAutoscaler(st, d, core, log, "http://"+cfg.Addr)
		if err != nil {
			return err
		}
		go loop.Run(ctx)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	go d.Run(ctx)
	fmt.Println("serving")
	return web.Serve(ctx, ln, web.NewRouter(web.Config{Store: st, Version: "e2e", Log: log, Dispatch: d}), log)
}

// e2eAutoscaler is the pools autoscaler with timings short enough for a test: nodes
// idle for 3 s go, cool-downs of a second.
func e2eAutoscaler(st *store.Store, d *dispatch.Service, core *scheduler.Scheduler, log *slog.Logger, server string) (*pools.Autoscaler, error) {
	svc, err := pools.New(pools.Deps{Store: st, Audit: audit.New(st, time.Now), Fleet: d, Now: time.Now, Log: log},
		pools.Config{Server: server, BootTimeout: time.Minute, ListGrace: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	dec, err := autoscale.New(core, autoscale.Config{ScaleUpCooldown: time.Second, ScaleDownDelay: time.Second, IdleTimeout: 3 * time.Second,
		MaxBatch: 5, BudgetHorizon: time.Hour})
	if err != nil {
		return nil, err
	}
	return pools.NewAutoscaler(svc, dec, d, nil, pools.LoopConfig{Every: 200 * time.Millisecond, ReconcileEvery: 300 * time.Millisecond,
		SampleEvery: time.Second, SampleRetention: time.Hour, DrainGrace: time.Second})
}
