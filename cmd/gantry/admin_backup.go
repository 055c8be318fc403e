package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/store"
)

func newAdminBackupCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Copy the embedded SQLite database to a new file, while gantry serve runs",
		Long: `Copy the embedded SQLite database of --data-dir to FILE, a file that must not exist yet.

The copy is the database as it was at one moment, taken while gantry serve goes on
working, in one file that holds everything the server keeps: jobs, their logs and
events, users, settings and the audit log. SQLite checks the copy before it gets its
name. The database is not migrated first, so a backup taken before an upgrade holds
the schema the older version wrote.

To restore: stop gantry serve, move the data directory's gantry.db, gantry.db-wal and
gantry.db-shm aside, put the backup in their place as gantry.db, and start gantry serve
(a backup from an older version is migrated then). gantry audit verify checks the
restored audit log.

A PostgreSQL database (--database-url) is backed up with pg_dump or the server's own
backups.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usageError{errors.New("name the file to write the backup to, e.g. gantry admin backup gantry-2026-12-06.db")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := db.config()
			if err != nil {
				return err
			}
			if cfg.DatabaseURL != "" {
				return usageError{fmt.Errorf("--database-url: %w", store.ErrBackupElsewhere)}
			}
			src := filepath.Join(cfg.DataDir, store.SQLiteFile)
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				return usageError{fmt.Errorf("--data-dir %s holds no database (%s): is it the server's data directory?", cfg.DataDir, store.SQLiteFile)}
			}
			// Opened without migrating: the backup holds the database as it is.
			st, err := store.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			b, err := st.Backup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Backed up %s (schema version %d) to %s: %.1f MiB.\n", src, b.Schema, args[0], float64(b.Bytes)/(1<<20))
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}
