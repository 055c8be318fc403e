package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd probes a local server's /healthz: container images without curl use it.
func newHealthcheckCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the gantry serving at --addr answers /healthz",
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return usageError{fmt.Errorf("--addr %q: want host:port", addr)}
			}
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = "127.0.0.1"
			}
			client := &http.Client{Timeout: 3 * time.Second}
			res, err := client.Get("http://" + net.JoinHostPort(host, port) + "/healthz")
			if err != nil {
				return fmt.Errorf("probe /healthz: %w", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("probe /healthz: status %d", res.StatusCode)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address the server listens on (host:port)")
	return cmd
}
