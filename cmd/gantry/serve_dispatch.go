package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/agent"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// dispatchOpts are the control-plane flags of `gantry serve`.
type dispatchOpts struct {
	nodeTimeout       time.Duration
	heartbeatInterval time.Duration
	noLocalAgent      bool
	localAgentGPUs    string
	auditAnchorEvery  time.Duration
	rawRetention      time.Duration
	rollupRetention   string
	logLimitMiB       int64
	logRetention      string
	pools             poolOpts
}

func (o *dispatchOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	d := dispatch.DefaultConfig()
	f.DurationVar(&o.nodeTimeout, "node-timeout", d.NodeTimeout, "a node silent this long is lost and its jobs are requeued")
	f.DurationVar(&o.heartbeatInterval, "heartbeat-interval", d.HeartbeatInterval, "how often agents heartbeat")
	f.Int64Var(&o.logLimitMiB, "job-log-limit-mib", dispatch.DefaultLogLimitMiB, "the most output kept of a job's stdout, and of its stderr, per attempt and replica, in MiB; what it writes after is not kept, and its timeline says so")
	f.StringVar(&o.logRetention, "job-log-retention", "0", "how long a job's output is kept after the job ends, in days such as 90d (at least 1d); 0 keeps it for good. Each job whose output is deleted says so on its timeline, and the audit log records it")
	f.BoolVar(&o.noLocalAgent, "no-local-agent", false, "do not run a node agent inside the server")
	f.StringVar(&o.localAgentGPUs, "local-agent-gpus", "2xA100-80GB,2xL4-24GB", "GPUs the local agent simulates when NVML finds no driver (labelled SIMULATED)")
	t := telemetry.DefaultConfig()
	f.DurationVar(&o.rawRetention, "telemetry-raw-retention", t.RawRetention, "how long raw GPU samples are kept before only their 1-minute roll-ups are")
	f.StringVar(&o.rollupRetention, "telemetry-rollup-retention", fmt.Sprintf("%dd", t.MinuteRetention/(24*time.Hour)), "how long 1-minute and 1-hour GPU roll-ups are kept, in days")
	f.DurationVar(&o.auditAnchorEvery, "audit-anchor-every", time.Hour, "how often the leader writes the audit log's head to the server log (\"audit anchor\"), for gantry audit verify --anchors to catch a cut-off tail; 0 turns it off")
	o.pools.addFlags(cmd)
}

// check refuses flags that startDispatch would, before serve listens.
func (o *dispatchOpts) check() error {
	if _, err := o.dispatchConfig(); err != nil {
		return err
	}
	_, err := o.telemetryConfig()
	return err
}

// maxLogLimitMiB bounds --job-log-limit-mib (1 TiB), far above any useful limit and
// far from overflowing a count of bytes.
const maxLogLimitMiB = 1 << 20

// dispatchConfig is the control plane's configuration as the flags set it.
func (o *dispatchOpts) dispatchConfig() (dispatch.Config, error) {
	cfg := dispatch.DefaultConfig()
	if o.logLimitMiB < 1 || o.logLimitMiB > maxLogLimitMiB {
		return cfg, usageError{fmt.Errorf("--job-log-limit-mib %d: want 1 to %d (MiB)", o.logLimitMiB, maxLogLimitMiB)}
	}
	retention, err := parseDays(o.logRetention)
	if err != nil || retention != 0 && retention < dispatch.MinLogRetention {
		return cfg, usageError{fmt.Errorf("--job-log-retention %q: want a number of days such as 90d (at least 1d), or 0 to keep output for good", o.logRetention)}
	}
	cfg.NodeTimeout, cfg.HeartbeatInterval, cfg.LogLimit, cfg.LogRetention = o.nodeTimeout, o.heartbeatInterval, o.logLimitMiB<<20, retention
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{fmt.Errorf("--node-timeout and --heartbeat-interval: %w", err)}
	}
	return cfg, nil
}

// telemetryConfig is the GPU history's retention as the flags set it.
func (o *dispatchOpts) telemetryConfig() (telemetry.Config, error) {
	if o.rawRetention <= 0 {
		return telemetry.Config{}, usageError{fmt.Errorf("--telemetry-raw-retention %s: want a duration such as 24h", o.rawRetention)}
	}
	rollups, err := parseDays(o.rollupRetention)
	if err != nil || rollups <= 0 {
		return telemetry.Config{}, usageError{fmt.Errorf("--telemetry-rollup-retention %q: want a number of days such as 90d", o.rollupRetention)}
	}
	cfg := telemetry.Config{RawRetention: o.rawRetention, MinuteRetention: rollups, HourRetention: rollups}
	if err := cfg.Validate(); err != nil {
		return telemetry.Config{}, usageError{fmt.Errorf("--telemetry-raw-retention %s, --telemetry-rollup-retention %s: %w", o.rawRetention, o.rollupRetention, err)}
	}
	return cfg, nil
}

// controlPlane is what serve's leader runs, for the router to call too.
type controlPlane struct {
	dispatch   *dispatch.Service
	governance *governance.Service
	// telemetry is the GPU history as the flags keep it, for the pages to chart.
	telemetry *telemetry.Service
	// wait returns once every loop stopped.
	wait func()
}

// startDispatch runs, on the replica that holds the leader lock, the dispatch loop,
// the masking of old jobs' output (until none is left), the deletion of output past
// the log retention, the Slurm pools (submitting
// to and following Slurm), GPU telemetry's roll-ups,
// cost metering, the anomaly rules, the pools' autoscaler and the audit anchors in
// the server log, and, unless turned
// off, a node agent for this machine, until ctx ends. Jobs the local agent runs keep
// running across a restart of the server.
func (o *dispatchOpts) startDispatch(ctx context.Context, st *store.Store, log *slog.Logger, dataDir string, addr net.Addr, cost *costOpts, publicURL string) (*controlPlane, error) {
	cfg, err := o.dispatchConfig()
	if err != nil {
		return nil, err
	}
	if o.auditAnchorEvery < 0 {
		return nil, usageError{fmt.Errorf("--audit-anchor-every %s: want a duration such as 1h, or 0 for none", o.auditAnchorEvery)}
	}
	core, err := configuredScheduler(ctx, st)
	if err != nil {
		return nil, err
	}
	sched := dispatch.NewPlacer(core)
	tcfg, err := o.telemetryConfig()
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.New(st, tcfg)
	if err != nil {
		return nil, err
	}
	al := audit.New(st, time.Now)
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: sched, Audit: al, Telemetry: tel, Now: time.Now, Log: log.With("component", "dispatch")}, cfg)
	if err != nil {
		return nil, err
	}
	acc, gov, err := cost.services(st, tel, d, log, publicURL)
	if err != nil {
		return nil, err
	}
	scaler, err := o.pools.autoscaler(st, d, core, acc, log.With("component", "autoscaler"), publicURL, addr)
	if err != nil {
		return nil, err
	}
	slurmPools := d.SlurmPools(dispatch.DefaultSlurmConfig())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lead(ctx, st, log, func(lctx context.Context) {
			var loops sync.WaitGroup
			for _, loop := range []func(){
				func() { d.Run(lctx) },
				func() { d.MaskOldLogs(lctx, time.Minute) },
				func() { d.DeleteAgedOutput(lctx, 10*time.Minute) },
				func() { slurmPools.Run(lctx) },
				func() { tel.RunMaintenance(lctx, time.Now, time.Minute, log.With("component", "telemetry")) },
				func() { acc.RunMetering(lctx, time.Now, cost.meterEvery, d.Ended(), log.With("component", "metering")) },
				func() { gov.Run(lctx, time.Now, cost.rulesEvery) },
				func() { scaler.Run(lctx) },
				func() {
					if o.auditAnchorEvery > 0 {
						al.LogAnchors(lctx, o.auditAnchorEvery, log.With("component", "audit"))
					}
				},
			} {
				loops.Add(1)
				go func() { defer loops.Done(); loop() }()
			}
			loops.Wait()
		})
	}()
	if !o.noLocalAgent {
		a, gpus, err := o.localAgent(ctx, st, al, log.With("component", "local-agent"), dataDir, addr)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer gpus.Close()
			if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("the local agent stopped; serve on with --no-local-agent or fix the cause", "err", err)
			}
		}()
	}
	return &controlPlane{dispatch: d, governance: gov, telemetry: tel, wait: wg.Wait}, nil
}

// lead runs fn whenever this replica holds the leader lock, until ctx ends; a
// replica that loses the lock (its database connection broke) stops fn and waits
// to lead again.
func lead(ctx context.Context, st *store.Store, log *slog.Logger, fn func(context.Context)) {
	for ctx.Err() == nil {
		lctx, release, err := st.Lead(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("cannot take the leader lock; retrying", "err", err)
				time.Sleep(2 * time.Second)
			}
			continue
		}
		log.Info("this replica leads: it runs dispatch, metering, rules and the autoscaler")
		fn(lctx)
		release()
		if ctx.Err() == nil {
			log.Warn("this replica lost the leader lock; another takes over")
		}
	}
}

// productionScheduler is dispatch's Placer over configuredScheduler.
func productionScheduler(ctx context.Context, st *store.Store) (dispatch.Scheduler, error) {
	s, err := configuredScheduler(ctx, st)
	if err != nil {
		return nil, err
	}
	return dispatch.NewPlacer(s), nil
}

// configuredScheduler is services/scheduler with the priority classes of the database.
func configuredScheduler(ctx context.Context, st *store.Store) (*scheduler.Scheduler, error) {
	cfg := scheduler.DefaultConfig()
	classes, err := st.PriorityClasses(ctx)
	if err != nil {
		return nil, err
	}
	if len(classes) > 0 {
		cfg.Classes = dispatch.SchedulerClasses(classes)
	}
	return scheduler.New(cfg)
}

// localAgent builds the agent of this machine: real GPUs when NVML finds them,
// else simulated ones. It joins through the protocol like any agent, with a
// join token minted for it on its first start.
func (o *dispatchOpts) localAgent(ctx context.Context, st *store.Store, al *audit.Log, log *slog.Logger, dataDir string, addr net.Addr) (*agent.Agent, gpu.Source, error) {
	name := defaultNodeName() + "-local"
	gpus, err := gpu.OpenNVML(time.Now)
	if errors.Is(err, gpu.ErrNoDriver) {
		log.Warn("no NVIDIA driver: the local agent simulates GPUs (labelled SIMULATED)", "gpus", o.localAgentGPUs)
		gpus, err = gpu.NewSimulated(o.localAgentGPUs, name, time.Now)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--local-agent-gpus: %w", err)}
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open NVML for the local agent: %w", err)
	}
	dir := filepath.Join(dataDir, "local-agent")
	token := ""
	if _, err := os.Stat(filepath.Join(dir, "node.json")); err != nil {
		token, _, err = dispatch.CreateJoinToken(audit.WithActor(ctx, audit.System()), st, al, time.Now(),
			dispatch.JoinTokenSpec{Name: "local-agent " + name, TTL: 10 * time.Minute})
		if err != nil {
			gpus.Close()
			return nil, nil, err
		}
	}
	shim, err := shimCommand()
	if err == nil {
		var a *agent.Agent
		a, err = agent.New(agent.Config{
			Server: localURL(addr), JoinToken: token, DataDir: dir, Name: name, Runtime: agentapi.RuntimeProcess,
			Version: version, Shim: shim, GPUs: gpus, HTTP: &http.Client{}, Log: log,
		})
		if err == nil {
			return a, gpus, nil
		}
	}
	gpus.Close()
	return nil, nil, err
}

// localURL is how the local agent reaches the server it runs in.
func localURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		port := 0
		if ok {
			port = tcp.Port
		}
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	return "http://" + tcp.String()
}
