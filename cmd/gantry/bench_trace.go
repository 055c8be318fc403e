package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/scheduler/tracebench"
)

// traceDir is where the shared Alibaba trace lives relative to a checkout's root.
const traceDir = "../shared/traces/alibaba-gpu-v2023/csv"

func newBenchTraceCmd() *cobra.Command {
	var nodes, pods, seeds, policy, format string
	var inflate float64
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Replay the Alibaba GPU trace (FGD protocol) under Gantry's scheduler and the published baselines",
		Long: `Replays an openb pod list on its node list exactly as the FGD paper's protocol does
(PROTOCOL.md beside the trace): workload inflated to --inflate times the cluster's GPUs
by seeded sampling, one pod at a time, failed pods dropped, a fixed random node priority
for ties. Gantry's policy is the production scheduler's placement in its default
configuration; the baselines are random, firstfit, dotprod, gpuclustering, gpupacking,
bestfit and fgd. Figures are means over the seeds; ratios are in percent. The ceiling
is the most any placement could reach that places what the policy placed before its
first failed sharing pod (an LP bound; CPU, memory and GPU models ignored).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			seedList, err := tracebench.ParseSeeds(seeds)
			if err != nil {
				return usageError{fmt.Errorf("--%w", err)}
			}
			pols, err := tracebench.SelectPolicies(policy)
			if err != nil {
				return usageError{fmt.Errorf("--policy: %w", err)}
			}
			if format != "table" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want table or json", format)}
			}
			nodeList, err := tracebench.ReadNodesFile(nodes)
			if err != nil {
				return err
			}
			podList, err := tracebench.ReadPodsFile(pods)
			if err != nil {
				return err
			}
			res, err := tracebench.Run(traceName(pods), nodeList, podList, inflate, seedList, pols)
			if err != nil {
				return fmt.Errorf("replay trace: %w", err)
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				return enc.Encode(res)
			}
			return tracebench.WriteTable(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodes, "nodes", filepath.Join(traceDir, "openb_node_list_gpu_node.csv"), "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
	f.StringVar(&pods, "pods", filepath.Join(traceDir, "openb_pod_list_default.csv"), "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])")
	f.StringVar(&seeds, "seeds", "42-51", "seeds: a range such as 42-51, or a list such as 42,45")
	f.Float64Var(&inflate, "inflate", 1.3, "arrived GPU demand as a multiple of the cluster's GPUs")
	f.StringVar(&policy, "policy", "all", "policy to run: all, or a comma-separated list of gantry, random, firstfit, dotprod, gpuclustering, gpupacking, bestfit, fgd")
	f.StringVar(&format, "format", "table", "output: table or json")
	return cmd
}

// traceName names a run after its pod list: openb_pod_list_gpushare40.csv -> gpushare40.
func traceName(pods string) string {
	name := strings.TrimSuffix(filepath.Base(pods), filepath.Ext(pods))
	return strings.TrimPrefix(name, "openb_pod_list_")
}
