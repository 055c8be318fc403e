package main

import (
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/quotas"
)

func newQuotasCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "quotas", Short: "The teams' quotas of a Gantry server and their use (after gantry login)"}
	var o clientOpts
	var team string
	ls := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List each team's quotas with what its jobs hold now",
		Long: `List each team's quotas per GPU model with what its jobs hold now: GPUs, CPU cores
and memory in use of the guarantee, and how much of it is borrowed from the cohort.
A team with any quota is limited in every GPU model; teams without one are listed
as "no quota" with what they hold.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			if team != "" {
				q.Set("team", team)
			}
			var out struct {
				Quotas []struct {
					Team             string `json:"team"`
					GPUModel         string `json:"gpu_model"`
					Cohort           string `json:"cohort"`
					GPUNominalMilli  int64  `json:"gpu_nominal_milli"`
					GPUUseMilli      int64  `json:"gpu_use_milli"`
					GPUBorrowedMilli int64  `json:"gpu_borrowed_milli"`
					CPUNominalMilli  int64  `json:"cpu_nominal_milli"`
					CPUUseMilli      int64  `json:"cpu_use_milli"`
					MemoryNominalMiB int64  `json:"memory_nominal_mib"`
					MemoryUseMiB     int64  `json:"memory_use_mib"`
				} `json:"quotas"`
				Unlimited []struct {
					Team        string `json:"team"`
					GPUModel    string `json:"gpu_model"`
					GPUUseMilli int64  `json:"gpu_use_milli"`
				} `json:"unlimited"`
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/quotas", q, &out)
			if err != nil {
				return fmt.Errorf("list quotas: %w", err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TEAM\tGPU MODEL\tCOHORT\tGPUS IN USE\tBORROWED\tCPU IN USE\tMEMORY IN USE")
			for _, r := range out.Quotas {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s of %s\t%s\t%s\t%s\n", r.Team, anyModel(r.GPUModel), dashIfEmpty(r.Cohort),
					quotas.GPUs(r.GPUUseMilli), quotas.GPUs(r.GPUNominalMilli), quotas.GPUs(r.GPUBorrowedMilli),
					ofLimit(quotas.Cores(r.CPUUseMilli), r.CPUNominalMilli, quotas.Cores(r.CPUNominalMilli)),
					ofLimit(quotas.GiB(r.MemoryUseMiB), r.MemoryNominalMiB, quotas.GiB(r.MemoryNominalMiB)))
			}
			for _, u := range out.Unlimited {
				fmt.Fprintf(w, "%s\t%s\t-\t%s (no quota)\t-\t-\t-\n", u.Team, anyModel(u.GPUModel), quotas.GPUs(u.GPUUseMilli))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			switch {
			case len(out.Quotas) > 0 || len(out.Unlimited) > 0:
			case team != "":
				fmt.Fprintf(cmd.ErrOrStderr(), "Team %s has no quota, and its jobs hold no GPUs now: it uses what is free.\n", team)
			default:
				fmt.Fprintln(cmd.ErrOrStderr(), "No team has a quota, and no team's jobs hold GPUs now: a team without a quota uses what is free.")
			}
			return nil
		},
	}
	o.addFlags(ls, true)
	ls.Flags().StringVar(&team, "team", "", "one team's quotas only")
	cmd.AddCommand(ls)
	return cmd
}

// anyModel names a quota's GPU model; a quota without one covers any model.
func anyModel(m string) string {
	if m == "" {
		return "any model"
	}
	return m
}

// ofLimit writes a use against its guarantee; a guarantee of 0 leaves it unlimited.
func ofLimit(use string, nominal int64, guarantee string) string {
	if nominal == 0 {
		return use + ", no limit"
	}
	return use + " of " + guarantee
}
