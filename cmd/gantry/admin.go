package main

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
)

func newAdminCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Offline administration: reset a password, create an API token, turn password login on or off, back up the database",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	token := &cobra.Command{
		Use:   "token",
		Short: "Create API tokens for scripts and first set-up",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	token.AddCommand(newAdminTokenCreateCmd(g))
	cmd.AddCommand(newAdminResetPasswordCmd(g), token, newAdminLocalLoginCmd(g), newAdminBackupCmd(g))
	return cmd
}

// offline opens the database and an identity service acting as the person at the console.
func offline(cmd *cobra.Command, g *globalOpts, db *dbOpts) (context.Context, *store.Store, *identity.Service, error) {
	st, err := db.open(cmd, g)
	if err != nil {
		return nil, nil, nil, err
	}
	name := "cli"
	if u, err := user.Current(); err == nil {
		name = "cli:" + u.Username
	}
	ctx := audit.WithActor(cmd.Context(), audit.Actor{Name: name, Type: models.ActorSystem})
	al := audit.New(st, time.Now)
	return ctx, st, identity.New(st, al, authz.New(st, al), time.Now, identity.Options{}), nil
}

// fieldUsage turns a service's field error into a usage error naming the flag.
func fieldUsage(err error, flags map[string]string) error {
	var fe *models.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if flag, ok := flags[fe.Field]; ok {
		return usageError{fmt.Errorf("%s: %s", flag, fe.Message)}
	}
	return usageError{fe}
}

func newAdminResetPasswordCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "reset-password USER",
		Short: "Give a local user a new random password (printed once) and end their sessions",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("name one user, e.g. gantry admin reset-password admin")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, st, id, err := offline(cmd, g, &db)
			if err != nil {
				return err
			}
			defer st.Close()
			password, err := id.ResetPassword(ctx, args[0])
			if err != nil {
				return fieldUsage(err, map[string]string{"user": "USER"})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "New password for %s: %s\nIt is shown only now; their sessions have ended.\n", args[0], password)
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}

func newAdminTokenCreateCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var username, name, scope, expires string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API token for a user and print it once (use it as Authorization: Bearer <token>)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ttl, err := parseDays(expires)
			if err != nil {
				return usageError{fmt.Errorf("--expires %q: %v", expires, err)}
			}
			if username == "" {
				return usageError{errors.New("--user: name the user the token acts as")}
			}
			ctx, st, id, err := offline(cmd, g, &db)
			if err != nil {
				return err
			}
			defer st.Close()
			u, err := st.UserByUsername(ctx, username)
			if errors.Is(err, store.ErrNotFound) {
				return usageError{fmt.Errorf("--user: no user is called %q", username)}
			}
			if err != nil {
				return err
			}
			if u.Disabled {
				return usageError{fmt.Errorf("--user: %s is disabled", username)}
			}
			secret, tok, err := id.CreateToken(ctx, u, name, scope, ttl)
			if err != nil {
				return fieldUsage(err, map[string]string{"name": "--name", "scope": "--scope", "expires": "--expires"})
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "Token %q for %s, scope %s, expires %s. It is shown only now.\n",
				tok.Name, username, tok.Scope, tok.ExpiresAt.Format(time.RFC3339))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&username, "user", "", "the user the token acts as (required)")
	f.StringVar(&name, "name", "cli", "a name that says what uses the token")
	f.StringVar(&scope, "scope", identity.ScopeWrite, "read (GET only) or write")
	f.StringVar(&expires, "expires", "90d", "lifetime in days, 1d to 365d")
	db.addFlags(cmd)
	return cmd
}

// parseDays reads a lifetime such as 30d (or 30), of at most 36500 days, which no
// caller wants more of and which keeps the duration far from overflowing.
func parseDays(s string) (time.Duration, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
	if err != nil || n < -36500 || n > 36500 {
		return 0, errors.New("want a number of days such as 30d")
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

func newAdminLocalLoginCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "local-login on|off",
		Short: "Turn password login on or off (off once single sign-on works; on again to break glass)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "on" && args[0] != "off") {
				return usageError{errors.New("say on or off")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, st, id, err := offline(cmd, g, &db)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := id.SetLocalLogin(ctx, args[0] == "on"); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "password login is %s\n", args[0])
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}
