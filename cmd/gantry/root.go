package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// globalOpts are the flags every subcommand has.
type globalOpts struct {
	configFile string
	logFormat  string
	logLevel   string
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globalOpts{}
	root := &cobra.Command{
		Use:   "gantry",
		Short: "Gantry: GPU cluster management — portal, scheduler and node agent in one binary",
		Long: `Gantry runs GPU jobs for data scientists and gives admins the fleet, quotas, costs and audit.

Every flag can also be set through an environment variable (GANTRY_ and the flag name in
upper case with dashes as underscores, e.g. GANTRY_DATABASE_URL) or a YAML config file
(--config; keys are flag names). A flag on the command line wins over the environment,
which wins over the config file.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return applySettings(cmd, g.configFile) },
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.configFile, "config", "", "YAML config file whose keys are flag names")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")

	root.AddCommand(
		newServeCmd(g),
		newAgentCmd(g),
		newJoinTokenCmd(g),
		newPoolCmd(g),
		newMigrateCmd(g),
		newAuditCmd(g),
		newCostCmd(g),
		newAdminCmd(g),
		newLoginCmd(),
		newJobCmd(),
		newImagesCmd(),
		newNodesCmd(),
		newQuotasCmd(),
		newBenchCmd(),
		newHealthcheckCmd(),
		newVersionCmd(),
	)
	root.Args = unknownCommand
	root.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	for _, c := range root.Commands() {
		if c.Args == nil {
			c.Args = noArgs
		}
		groups(c)
	}
	return root
}

// groups makes each command under c that holds others refuse a word that is none of
// them as a usage error naming them, and one that only holds others (job, images, …)
// print its help when given no word: cobra printed the help and exited 0, so that a
// script's "gantry job list" looked like success.
func groups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		groups(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	c.Args = unknownCommand
	if !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// unknownCommand refuses a word that is none of the command's subcommands, naming them.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if len(names) == 0 { // only hidden ones, such as agent shim
		return noArgs(cmd, args)
	}
	return usageError{fmt.Errorf("%q is not a command of %s: one of %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))}
}

// flagError says a flag's bad value as Gantry's own checks do (--flag "value": want
// …), rather than in strconv's words ("strconv.ParseInt: parsing \"abc\": invalid syntax").
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	want := "a " + iv.GetFlag().Value.Type()
	switch iv.GetFlag().Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		want = "a whole number"
		if errors.Is(err, strconv.ErrRange) {
			want = "a whole number of sensible size"
		}
	case "float32", "float64":
		want = "a number such as 0.5"
	case "bool":
		want = "true or false"
	case "duration":
		want = "a duration such as 90s, 30m or 2h"
	}
	return fmt.Errorf("--%s %q: want %s", iv.GetFlag().Name, iv.GetValue(), want)
}

// noArgs refuses stray positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this gantry",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "gantry", version)
			return nil
		},
	}
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run Gantry's benchmarks (scheduler trace replay and more)",
	}
	cmd.AddCommand(newBenchTraceCmd(), newBenchFleetCmd())
	return cmd
}
