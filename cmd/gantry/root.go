package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
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
		newBenchCmd(),
		newHealthcheckCmd(),
		newVersionCmd(),
	)
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	for _, c := range root.Commands() {
		if c.Args == nil {
			c.Args = noArgs
		}
	}
	return root
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
