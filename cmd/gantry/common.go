package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/store"
)

// dbOpts are the database flags of every subcommand that touches the database.
type dbOpts struct {
	dataDir     string
	databaseURL string
	maxConns    int
}

func (o *dbOpts) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.dataDir, "data-dir", "./gantry-data", "directory of the embedded SQLite database and local state")
	cmd.Flags().StringVar(&o.databaseURL, "database-url", "", "PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DB); empty uses SQLite in --data-dir")
	cmd.Flags().IntVar(&o.maxConns, "database-max-conns", store.DefaultMaxConns, "most PostgreSQL connections this process holds; keep replicas × this under the server's max_connections")
}

// config is the store configuration the flags name.
func (o *dbOpts) config() (store.Config, error) {
	if o.maxConns < 1 {
		return store.Config{}, usageError{fmt.Errorf("--database-max-conns %d: want 1 or more", o.maxConns)}
	}
	return store.Config{DataDir: o.dataDir, DatabaseURL: o.databaseURL, MaxConns: o.maxConns}, nil
}

// open opens and migrates the database named by the flags, logging through the
// logger of the global flags: what every subcommand that only reads or writes the
// database starts with.
func (o *dbOpts) open(cmd *cobra.Command, g *globalOpts) (*store.Store, error) {
	log, err := g.newLogger(cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	return o.openStore(cmd.Context(), log)
}

// openStore opens and migrates the database named by the flags.
func (o *dbOpts) openStore(ctx context.Context, log *slog.Logger) (*store.Store, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	applied, err := st.Migrate(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("database migrated", slog.String("database", st.Dialect()), slog.Any("applied", applied))
	}
	return st, nil
}

// newLogger builds the process logger from --log-format and --log-level.
func (g *globalOpts) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(g.logFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", g.logFormat)}
}
