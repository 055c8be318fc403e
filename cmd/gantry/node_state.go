package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// newNodeStateCmd is an admin's verb on one node that POSTs /api/v1/nodes/NAME/state
// with state, as the console's buttons do, and says the node's state after it.
func newNodeStateCmd(verb, state, short, example string) *cobra.Command {
	var o clientOpts
	var reason, drainFor string
	cmd := &cobra.Command{
		Use:     verb + " NAME",
		Short:   short,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("give one node name, e.g. gpu-07 (gantry nodes ls lists them)")}
			}
			body := map[string]string{"state": state, "reason": reason}
			if state == "draining" {
				if !cmd.Flags().Changed("for") {
					return usageError{errors.New("--for: say how long running jobs may go on before they are checkpoint-stopped, e.g. --for 30m (0s: at once)")}
				}
				if d, err := time.ParseDuration(drainFor); err != nil || d < 0 {
					return usageError{fmt.Errorf("--for %q: want a duration such as 30m or 2h (0s: at once)", drainFor)}
				}
				body["drain_for"] = drainFor
			}
			// Three strings always encode.
			b, _ := json.Marshal(body)
			return o.post(cmd, verb+" node "+args[0], "/api/v1/nodes/"+url.PathEscape(args[0])+"/state", b, func(raw []byte) (string, error) {
				var n struct {
					Name          string     `json:"name"`
					State         string     `json:"state"`
					StateReason   string     `json:"state_reason"`
					DrainDeadline *time.Time `json:"drain_deadline"`
				}
				if err := json.Unmarshal(raw, &n); err != nil {
					return "", err
				}
				line := "Node " + n.Name + ": " + n.State
				if n.DrainDeadline != nil {
					line += "; running jobs are checkpoint-stopped at " + n.DrainDeadline.UTC().Format(time.DateTime) + " UTC if still running"
				}
				if n.StateReason != "" {
					line += " (" + n.StateReason + ")"
				}
				return line + ".", nil
			})
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the node's page and the audit log (at most 500 characters)")
	if state == "draining" {
		cmd.Flags().StringVar(&drainFor, "for", "", "how long running jobs may go on before they are checkpoint-stopped, e.g. 30m (0s: at once)")
	}
	return cmd
}
