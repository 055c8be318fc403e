package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// listedNode is what the nodes table shows of a node of the API.
type listedNode struct {
	Name            string     `json:"name"`
	Pool            string     `json:"pool"`
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
}

// allNodes reads every page of GET /api/v1/nodes for q: each node as the API wrote it,
// and how many nodes were removed.
func allNodes(ctx context.Context, c *apiClient, q url.Values) ([]json.RawMessage, int, error) {
	var nodes []json.RawMessage
	for {
		var page struct {
			Nodes      []json.RawMessage `json:"nodes"`
			Removed    int               `json:"removed"`
			NextCursor *string           `json:"next_cursor"`
		}
		if _, err := c.getJSON(ctx, "/api/v1/nodes", q, &page); err != nil {
			return nil, 0, err
		}
		nodes = append(nodes, page.Nodes...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return nodes, page.Removed, nil
		}
		q.Set("cursor", *page.NextCursor)
	}
}

func newNodesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "nodes", Short: "List a Gantry server's nodes; admins cordon, drain, return and remove them (after gantry login)"}
	var o clientOpts
	var removed bool
	var states []string
	var name, pool string
	ls := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List the nodes with their GPUs (removed nodes only with --removed)",
		Example: `  gantry nodes ls --state lost,down
  gantry nodes ls --pool spot-east --name rack7 -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{"limit": {"500"}}
			if removed {
				q.Set("include_removed", "true")
			}
			if len(states) > 0 {
				q.Set("state", strings.Join(states, ","))
			}
			if name != "" {
				q.Set("name", name)
			}
			if pool != "" {
				q.Set("pool", pool)
			}
			raws, removedCount, err := allNodes(cmd.Context(), c, q)
			if err != nil {
				return fmt.Errorf("list nodes: %w", err)
			}
			if o.output != "table" {
				if raws == nil {
					raws = []json.RawMessage{}
				}
				b, err := json.Marshal(map[string]any{"nodes": raws, "removed": removedCount})
				if err != nil {
					return err
				}
				return printRaw(cmd.OutOrStdout(), o.output, b)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tGPUS\tDRIVER\tRUNTIME\tLAST HEARTBEAT (UTC)\tPOOL")
			for _, raw := range raws {
				var n listedNode
				if err := json.Unmarshal(raw, &n); err != nil {
					return fmt.Errorf("read a node of %s: %w", c.base, err)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.stateText(), n.gpuText(), dashIfEmpty(n.DriverVersion), n.Runtime, utc(n.LastHeartbeatAt), dashIfEmpty(n.Pool))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if !removed && removedCount > 0 {
				noun := "nodes"
				if removedCount == 1 {
					noun = "node"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Not shown: %d removed %s; gantry nodes ls --removed lists them.\n", removedCount, noun)
			}
			return nil
		},
	}
	o.addFlags(ls, true)
	ls.Flags().BoolVar(&removed, "removed", false, "list the removed nodes too (out of service for good, kept for their history)")
	ls.Flags().StringSliceVar(&states, "state", nil, "only nodes in these states: ready, draining, cordoned, lost, down")
	ls.Flags().StringVar(&name, "name", "", "only nodes whose name holds this, in any letter case")
	ls.Flags().StringVar(&pool, "pool", "", "only the nodes of this pool")
	cmd.AddCommand(ls,
		newNodeStateCmd("cordon", "cordoned", "Start nothing new on a node; what runs there goes on (admins)", "  gantry nodes cordon gpu-07 --reason 'flaky fan'"),
		newNodeStateCmd("drain", "draining", "Start nothing new on a node and checkpoint-stop what runs there after --for (admins); the jobs are queued again", "  gantry nodes drain gpu-07 --for 30m --reason 'kernel update'"),
		newNodeStateCmd("ready", "ready", "Return a cordoned, drained or down node to service (admins)", "  gantry nodes ready gpu-07"),
		newNodeRemoveCmd(),
	)
	return cmd
}

// gpuText says a node's GPUs by model ("8×H100-80GB"), whether they are simulated and
// how many are unhealthy.
func (n *listedNode) gpuText() string {
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
	return desc
}

// stateText is a node's state, or when it was removed.
func (n *listedNode) stateText() string {
	if n.RemovedAt != nil {
		return "removed " + n.RemovedAt.UTC().Format(time.DateOnly)
	}
	return n.State
}
