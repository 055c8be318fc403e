package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/store"
)

func newMigrateCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the database schema up to this gantry's version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.newLogger(cmd.ErrOrStderr()); err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg, err := db.config()
			if err != nil {
				return err
			}
			st, err := store.Open(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			applied, err := st.Migrate(ctx)
			if err != nil {
				return err
			}
			status, err := st.SchemaStatus(ctx)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s database already at schema version %d\n", st.Dialect(), status.Current)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s database migrated to schema version %d (applied %v)\n", st.Dialect(), status.Current, applied)
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}
