package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/web"
)

func newServeCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var auth authOpts
	var disp dispatchOpts
	var cost costOpts
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the portal, the API and the control plane",
		Long: `Serve the portal, the API and the control plane.

With no configuration at all it keeps its state in an embedded SQLite database in
--data-dir; --database-url postgres://… switches to PostgreSQL.

It also runs a node agent for this machine (off with --no-local-agent): on real
GPUs when NVML finds a driver, else on simulated ones, so jobs run out of the box.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.newLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			authOptions, secure, err := auth.options()
			if err != nil {
				return err
			}
			if err := cost.check(); err != nil {
				return err
			}
			if err := disp.check(); err != nil {
				return err
			}
			gc, _ := web.TuneGC(os.Getenv, web.CgroupMemoryMax)
			ctx := cmd.Context()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, unwrapNetError(err))
			}
			defer ln.Close()
			st, err := db.openStore(ctx, log)
			if err != nil {
				return err
			}
			defer st.Close()
			// The address line comes first, but only once the first admin exists: whoever
			// waits for it may sign in at once.
			var firstStart strings.Builder
			if err := bootstrap(ctx, &firstStart, st, authOptions); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Gantry %s is serving at http://%s/ (database: %s)\n%s", version, ln.Addr(), st.Dialect(), firstStart.String())
			// Logged once serving, so that a start refused for bad input says only why.
			log.Info("garbage collector", slog.String("setting", gc.String()))
			dctx, stopDispatch := context.WithCancel(ctx)
			plane, err := disp.startDispatch(dctx, st, log, db.dataDir, ln.Addr(), &cost, auth.publicURL)
			if err != nil {
				stopDispatch()
				return err
			}
			defer func() { stopDispatch(); plane.wait() }()
			if auth.metricsToken == "" {
				log.Warn("/metrics is public: it names jobs, projects, teams and hosts; set --metrics-token (GANTRY_METRICS_TOKEN) to require a scrape token")
			}
			router := web.NewRouter(web.Config{Store: st, Version: version, Log: log, Dispatch: plane.dispatch, Governance: plane.governance, Telemetry: plane.telemetry,
				Auth: authOptions, TrustedProxies: auth.trustedProxies, SecureCookies: secure, MetricsToken: auth.metricsToken})
			if err := web.Serve(ctx, ln, router, log); err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			log.Info("stopped", slog.String("addr", ln.Addr().String()))
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port)")
	db.addFlags(cmd)
	auth.addFlags(cmd)
	disp.addFlags(cmd)
	cost.addFlags(cmd)
	return cmd
}

// unwrapNetError keeps the useful end of a listen error ("address already in use").
func unwrapNetError(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
