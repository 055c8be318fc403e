package main

import (
	"errors"
	"fmt"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

func newJoinTokenCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join-token",
		Short: "Create, list and revoke the tokens node agents join with",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newJoinTokenCreateCmd(g), newJoinTokenListCmd(g), newJoinTokenRevokeCmd(g))
	return cmd
}

// cliActor is who the audit log records for a command run on the server machine.
func cliActor() audit.Actor {
	name := "cli"
	if u, err := user.Current(); err == nil {
		name = "cli:" + u.Username
	}
	return audit.Actor{Name: name, Type: models.ActorSystem}
}

func newJoinTokenCreateCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var spec dispatch.JoinTokenSpec
	var pool string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print it (it is shown only once)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := audit.WithActor(cmd.Context(), cliActor())
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			if pool != "" {
				p, err := st.NodePoolByName(ctx, pool)
				if errors.Is(err, store.ErrNotFound) {
					return usageError{fmt.Errorf("--pool %q: there is no such pool; `gantry pool ls` lists them", pool)}
				}
				if err != nil {
					return err
				}
				spec.PoolID = &p.ID
			}
			token, t, err := dispatch.CreateJoinToken(ctx, st, audit.New(st, time.Now), time.Now(), spec)
			var fe *models.FieldError
			if errors.As(err, &fe) {
				return usageError{fmt.Errorf("--%s: %s", fe.Field, fe.Message)}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), token)
			fmt.Fprintf(cmd.ErrOrStderr(), "join token %q expires %s; on each node run:\n  gantry agent --server URL --join-token %s\n",
				t.Name, t.ExpiresAt.Format(time.RFC3339), token)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Name, "name", "", "what the token is for, e.g. rack-12 (required)")
	f.StringVar(&pool, "pool", "", "the pool the nodes that join with it belong to (see `gantry pool ls`)")
	f.DurationVar(&spec.TTL, "ttl", 24*time.Hour, "how long the token can be used")
	f.BoolVar(&spec.Reusable, "reusable", false, "let many nodes join with this token (default: one node)")
	db.addFlags(cmd)
	return cmd
}

func newJoinTokenListCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List join tokens",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			tokens, err := st.JoinTokens(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tREUSABLE\tEXPIRES\tUSED")
			now := time.Now()
			for _, t := range tokens {
				state := "valid"
				switch {
				case t.RevokedAt != nil:
					state = "revoked"
				case !now.Before(t.ExpiresAt):
					state = "expired"
				case !t.Reusable && t.UsedAt != nil:
					state = "used"
				}
				used := "-"
				if t.UsedAt != nil {
					used = t.UsedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\n", t.Name, state, t.Reusable, t.ExpiresAt.UTC().Format(time.RFC3339), used)
			}
			return w.Flush()
		},
	}
	db.addFlags(cmd)
	return cmd
}

func newJoinTokenRevokeCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke the join tokens called NAME (nodes that joined keep their credentials)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := audit.WithActor(cmd.Context(), cliActor())
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			err = dispatch.RevokeJoinToken(ctx, st, audit.New(st, time.Now), time.Now(), args[0])
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no valid join token is called %q (see `gantry join-token ls`)", args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "join token %q revoked\n", args[0])
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}
