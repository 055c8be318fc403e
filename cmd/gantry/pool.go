package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/pools"
)

func newPoolCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Define node pools (providers, templates, capacity types, size limits) and list them",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPoolApplyCmd(g), newPoolListCmd(g))
	return cmd
}

// poolFile is the YAML that `gantry pool apply` reads.
type poolFile struct {
	Pools []pools.Spec `yaml:"pools"`
}

func newPoolApplyCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "apply FILE",
		Short: "Create or change the pools a YAML file defines (pools: [{name, provider, capacity_type, …}])",
		Long: `Create the pools of FILE, or change the pools of the same names. FILE is YAML:

  pools:
    - name: a100-spot
      provider: exec            # static | exec | slurm
      capacity_type: spot       # owned | on-demand | spot
      region: eu-west-1
      zone: eu-west-1a
      min_nodes: 0
      max_nodes: 8
      idle_timeout: 10m
      drain_stops_jobs: true
      template: {gpu_model: A100-80GB, gpus: 8, cpu_milli: 96000, memory_mib: 1048576, scratch_mib: 1048576}
      provider_config: {command: [/etc/gantry/aws-pool.sh], timeout_sec: 300}

Every pool is checked before any is written; the first wrong field is named.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usageError{fmt.Errorf("read pools: %w", err)}
			}
			var f poolFile
			dec := yaml.NewDecoder(bytes.NewReader(raw))
			dec.KnownFields(true)
			if err := dec.Decode(&f); err != nil {
				return usageError{fmt.Errorf("%s: %w", args[0], err)}
			}
			if len(f.Pools) == 0 {
				return usageError{fmt.Errorf("%s defines no pools: want a list under pools:", args[0])}
			}
			for i, s := range f.Pools {
				if _, err := s.Validate(); err != nil {
					return poolError(args[0], i, s.Name, err)
				}
			}
			ctx := audit.WithActor(cmd.Context(), cliActor())
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			al := audit.New(st, time.Now)
			for i, s := range f.Pools {
				p, created, err := pools.Apply(ctx, st, al, s)
				if err != nil {
					return poolError(args[0], i, s.Name, err)
				}
				verb := "changed"
				if created {
					verb = "created"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "pool %s %s (%s, %s, %d to %d nodes)\n", p.Name, verb, p.Provider, p.CapacityType, p.MinNodes, p.MaxNodes)
			}
			return nil
		},
	}
	db.addFlags(cmd)
	return cmd
}

func poolError(file string, i int, name string, err error) error {
	var fe *models.FieldError
	if errors.As(err, &fe) {
		return usageError{fmt.Errorf("%s: pools[%d] (%s): %s: %s", file, i, name, fe.Field, fe.Message)}
	}
	return err
}

func newPoolListCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List pools with their nodes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.NodePools(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tPROVIDER\tCAPACITY\tREGION\tZONE\tMIN\tMAX\tNODES\tTEMPLATE")
			for _, p := range list {
				nodes, err := st.NodesOfPool(cmd.Context(), p.ID)
				if err != nil {
					return err
				}
				t, err := pools.ParseTemplate(p.Template)
				if err != nil {
					return err
				}
				live := 0
				for _, n := range nodes {
					if n.State != models.NodeDown {
						live++
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", p.Name, p.Provider, p.CapacityType, dash(p.Region), dash(p.Zone),
					p.MinNodes, p.MaxNodes, live, describeTemplate(t))
			}
			return w.Flush()
		},
	}
	db.addFlags(cmd)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func describeTemplate(t pools.Template) string {
	s := fmt.Sprintf("%d CPU, %d GiB", t.CPUMilli/1000, t.MemoryMiB/1024)
	if t.GPUs > 0 {
		s = fmt.Sprintf("%dx%s, ", t.GPUs, t.GPUModel) + s
	}
	return s
}
