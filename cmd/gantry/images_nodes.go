package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "images", Short: "The image catalog of a Gantry server (after gantry login)"}
	var o clientOpts
	var search, framework, status string
	ls := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List the catalog's images",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"q": search, "framework": framework, "status": status} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var out struct {
				Images []struct {
					Name             string `json:"name"`
					Reference        string `json:"reference"`
					Framework        string `json:"framework"`
					FrameworkVersion string `json:"framework_version"`
					CUDAVersion      string `json:"cuda_version"`
					Status           string `json:"status"`
				} `json:"images"`
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/images", q, &out)
			if err != nil {
				return fmt.Errorf("list images: %w", err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tFRAMEWORK\tCUDA\tSTATUS\tREFERENCE")
			for _, i := range out.Images {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", i.Name, strings.TrimSpace(i.Framework+" "+i.FrameworkVersion), dashIfEmpty(i.CUDAVersion), i.Status, i.Reference)
			}
			return w.Flush()
		},
	}
	o.addFlags(ls, true)
	ls.Flags().StringVar(&search, "search", "", "words to look for in names, references and versions")
	ls.Flags().StringVar(&framework, "framework", "", "pytorch, tensorflow, jax, cuda, …")
	ls.Flags().StringVar(&status, "status", "", "certified, uncertified or deprecated")
	cmd.AddCommand(ls)
	return cmd
}

func newNodesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "nodes", Short: "The nodes of a Gantry server (after gantry login)"}
	var o clientOpts
	var removed bool
	ls := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List the nodes with their GPUs (removed nodes only with --removed)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var out struct {
				Nodes []struct {
					Name            string     `json:"name"`
					State           string     `json:"state"`
					Simulated       bool       `json:"simulated"`
					Runtime         string     `json:"runtime"`
					DriverVersion   string     `json:"driver_version"`
					LastHeartbeatAt *time.Time `json:"last_heartbeat_at"`
					RemovedAt       *time.Time `json:"removed_at"`
					GPUs            []struct {
						Model   string `json:"model"`
						Healthy bool   `json:"healthy"`
					} `json:"gpus"`
				} `json:"nodes"`
				Removed int `json:"removed"`
			}
			q := url.Values{}
			if removed {
				q.Set("include_removed", "true")
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/nodes", q, &out)
			if err != nil {
				return fmt.Errorf("list nodes: %w", err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tGPUS\tDRIVER\tRUNTIME\tLAST HEARTBEAT (UTC)")
			for _, n := range out.Nodes {
				counts := map[string]int{}
				var models []string
				unhealthy := 0
				for _, g := range n.GPUs {
					if counts[g.Model] == 0 {
						models = append(models, g.Model)
					}
					counts[g.Model]++
					if !g.Healthy {
						unhealthy++
					}
				}
				var gpus []string
				for _, m := range models {
					gpus = append(gpus, strconv.Itoa(counts[m])+"×"+m)
				}
				desc := dashIfEmpty(strings.Join(gpus, " "))
				if n.Simulated {
					desc += " SIMULATED"
				}
				if unhealthy > 0 {
					desc += fmt.Sprintf(" (%d unhealthy)", unhealthy)
				}
				state := n.State
				if n.RemovedAt != nil {
					state = "removed " + n.RemovedAt.UTC().Format(time.DateOnly)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, state, desc, dashIfEmpty(n.DriverVersion), n.Runtime, utc(n.LastHeartbeatAt))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if !removed && out.Removed > 0 {
				noun := "nodes"
				if out.Removed == 1 {
					noun = "node"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Not shown: %d removed %s; gantry nodes ls --removed lists them.\n", out.Removed, noun)
			}
			return nil
		},
	}
	o.addFlags(ls, true)
	ls.Flags().BoolVar(&removed, "removed", false, "list the removed nodes too (out of service for good, kept for their history)")
	cmd.AddCommand(ls)
	return cmd
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
