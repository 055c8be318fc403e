package main

import (
	"encoding/json"
	"errors"
	"net/url"

	"github.com/spf13/cobra"
)

func newNodeRemoveCmd() *cobra.Command {
	var o clientOpts
	var reason string
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Take a node out of service for good (admins): its agent is refused until it joins again with a new join token",
		Long: `Take a node out of service for good, as the console's Remove does: it goes down, its
agent's credential is revoked, and node lists leave it out unless asked. A machine an
autoscaled pool created is deleted. Refused while jobs run there: drain it first. Its
history (allocations, costs, telemetry) stays.`,
		Example: "  gantry nodes drain gpu-07 --for 30m && gantry nodes remove gpu-07 --reason 'decommissioned'",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("give one node name, e.g. gpu-07 (gantry nodes ls lists them)")}
			}
			// One string always encodes.
			b, _ := json.Marshal(map[string]string{"reason": reason})
			return o.post(cmd, "remove node "+args[0], "/api/v1/nodes/"+url.PathEscape(args[0])+"/remove", b, func([]byte) (string, error) {
				return "Removed node " + args[0] + ": its agent is refused from now on.", nil
			})
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the node's page and the audit log (at most 500 characters)")
	return cmd
}
