package main

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
)

// poolOpts are the autoscaler's flags of `gantry serve`.
type poolOpts struct {
	every, idleTimeout, bootTimeout, cooldown, downDelay, drainGrace time.Duration
	maxBatch                                                         int
	serverURL                                                        string
}

func (o *poolOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	a, l, p := autoscale.DefaultConfig(), pools.DefaultLoopConfig(), pools.DefaultConfig()
	f.DurationVar(&o.every, "autoscale-every", l.Every, "how often the autoscaler decides whether pools grow or shrink")
	f.DurationVar(&o.idleTimeout, "pool-idle-timeout", a.IdleTimeout, "a pool node without work this long is scaled down (a pool's idle_timeout wins)")
	f.DurationVar(&o.bootTimeout, "pool-boot-timeout", p.BootTimeout, "a machine whose agent does not join this long after it was asked for is deleted")
	f.DurationVar(&o.cooldown, "pool-scale-up-cooldown", a.ScaleUpCooldown, "after a scale-up a pool waits this long before the next")
	f.DurationVar(&o.downDelay, "pool-scale-down-delay", a.ScaleDownDelay, "after a scale-up a pool removes no node for this long")
	f.DurationVar(&o.drainGrace, "pool-drain-grace", l.DrainGrace, "a node being scaled down gives running jobs this long before they are checkpoint-stopped (pools with drain_stops_jobs)")
	f.IntVar(&o.maxBatch, "pool-max-batch", a.MaxBatch, "the most nodes one decision adds to one pool")
	f.StringVar(&o.serverURL, "pool-server-url", "", "URL new machines' agents reach this server at (default: --public-url, else the listening address)")
}

// autoscaler builds the pools service and the autoscaler loop over dispatch.
func (o *poolOpts) autoscaler(st *store.Store, d *dispatch.Service, sched *scheduler.Scheduler, acc *accounting.Accounting, log *slog.Logger, publicURL string, addr net.Addr) (*pools.Autoscaler, error) {
	server := o.serverURL
	if server == "" {
		server = publicURL
	}
	if server == "" {
		server = localURL(addr)
	}
	pcfg := pools.Config{Server: server, BootTimeout: o.bootTimeout, ListGrace: pools.DefaultConfig().ListGrace}
	svc, err := pools.New(pools.Deps{Store: st, Audit: audit.New(st, time.Now), Fleet: d, Now: time.Now, Log: log}, pcfg)
	if err != nil {
		return nil, usageError{fmt.Errorf("--pool-boot-timeout: %w", err)}
	}
	acfg := autoscale.Config{ScaleUpCooldown: o.cooldown, ScaleDownDelay: o.downDelay, IdleTimeout: o.idleTimeout, MaxBatch: o.maxBatch,
		BudgetHorizon: autoscale.DefaultConfig().BudgetHorizon}
	dec, err := autoscale.New(sched, acfg)
	if err != nil {
		return nil, usageError{fmt.Errorf("--pool-idle-timeout, --pool-scale-up-cooldown, --pool-scale-down-delay and --pool-max-batch: %w", err)}
	}
	lcfg := pools.DefaultLoopConfig()
	lcfg.Every, lcfg.DrainGrace = o.every, o.drainGrace
	loop, err := pools.NewAutoscaler(svc, dec, d, acc, lcfg)
	if err != nil {
		return nil, usageError{fmt.Errorf("--autoscale-every and --pool-drain-grace: %w", err)}
	}
	return loop, nil
}
