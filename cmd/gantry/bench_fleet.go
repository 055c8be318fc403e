package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/pools/fleetsim"
	"github.com/gantry-gpu/gantry/services/scheduler/tracebench"
)

// fleetReport is what `gantry bench fleet --format json` prints.
type fleetReport struct {
	StaticCost       float64             `json:"static_cost"`
	AutoscaleCost    float64             `json:"autoscale_cost"`
	SpotCost         float64             `json:"spot_cost"`
	SavingsPct       float64             `json:"savings_pct"`
	P95QueueDelayS   float64             `json:"p95_queue_delay_s"`
	MeanQueueDelayS  float64             `json:"mean_queue_delay_s"`
	GPUHours         float64             `json:"gpu_hours"`
	Interruptions    int                 `json:"interruptions"`
	Survived         int                 `json:"interruptions_survived"`
	JobsLost         int                 `json:"jobs_lost"`
	Scenarios        []fleetsim.Scenario `json:"scenarios"`
	Speedup          float64             `json:"speedup"`
	InterruptionRate float64             `json:"interruption_rate"`
	SpotRatio        float64             `json:"spot_ratio"`
}

func newBenchFleetCmd() *cobra.Command {
	var nodes, pods, format, spotQoS string
	cfg := fleetsim.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Replay the Alibaba trace's arrivals on elastic pools: static vs autoscaled vs autoscaled with spot",
		Long: `Replays the pod list's creation and deletion times (divided by --speedup) on fleets
built from the node list's machine types, time-stepped, with the production scheduler
and autoscaler: (a) a static on-demand fleet sized for the peak, (b) autoscaled
on-demand pools, (c) autoscaled on-demand and spot pools (spot at --spot-ratio of the
on-demand price, reclaimed at --interruption-rate per node-hour; jobs whose QoS is in
--spot-qos may take spot, checkpoint on a notice and resume elsewhere). Reports cost,
GPU-hours, queueing delay (simulated time), interruptions and jobs lost.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want table or json", format)}
			}
			cfg.SpotQoS = strings.Split(spotQoS, ",")
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			nodeList, err := tracebench.ReadNodesFile(nodes)
			if err != nil {
				return err
			}
			podList, err := tracebench.ReadPodsFile(pods)
			if err != nil {
				return err
			}
			if podList[len(podList)-1].Deleted == 0 {
				return usageError{fmt.Errorf("--pods %s has no creation_time and deletion_time columns to replay", pods)}
			}
			res, err := fleetsim.Run(nodeList, podList, cfg)
			if err != nil {
				return fmt.Errorf("fleet simulation: %w", err)
			}
			rep := fleetReport{StaticCost: res.Static.Cost, AutoscaleCost: res.Autoscale.Cost, SpotCost: res.Spot.Cost, SavingsPct: res.SavingsPct,
				P95QueueDelayS: res.Spot.P95QueueDelayS, MeanQueueDelayS: res.Spot.MeanQueueDelayS, GPUHours: res.Spot.GPUHours,
				Interruptions: res.Spot.Interruptions, Survived: res.Spot.Survived,
				JobsLost:  res.Static.JobsLost + res.Autoscale.JobsLost + res.Spot.JobsLost,
				Scenarios: []fleetsim.Scenario{res.Static, res.Autoscale, res.Spot}, Speedup: cfg.Speedup, InterruptionRate: cfg.InterruptionRate,
				SpotRatio: cfg.SpotRatio}
			if format == "json" {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "fleet\tcost\tGPU-hours run\tGPU-hours paid\tpeak nodes\tmean wait s\tp95 wait s\tinterruptions\tsurvived\tjobs lost\t")
			for _, s := range rep.Scenarios {
				fmt.Fprintf(w, "%s\t%.2f\t%.1f\t%.1f\t%d\t%.1f\t%.0f\t%d\t%d\t%d\t\n", s.Name, s.Cost, s.GPUHours, s.ProvisionedGPUHours, s.PeakNodes,
					s.MeanQueueDelayS, s.P95QueueDelayS, s.Interruptions, s.Survived, s.JobsLost)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "spot fleet vs static peak fleet: %.1f%% lower cost; %d jobs, %.0f simulated hours (speedup %g)\n",
				rep.SavingsPct, res.Jobs, res.Spot.SimulatedHours, cfg.Speedup)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodes, "nodes", filepath.Join(traceDir, "openb_node_list_gpu_node.csv"), "node list CSV: its machine types become the pools")
	f.StringVar(&pods, "pods", filepath.Join(traceDir, "openb_pod_list_default.csv"), "pod list CSV with qos, creation_time and deletion_time")
	f.Float64Var(&cfg.Speedup, "speedup", cfg.Speedup, "divide the trace's times by this")
	f.DurationVar(&cfg.Step, "step", cfg.Step, "simulated time between two scheduler and autoscaler passes")
	f.DurationVar(&cfg.BootTime, "boot-time", cfg.BootTime, "how long a new machine takes to join")
	f.Float64Var(&cfg.SpotRatio, "spot-ratio", cfg.SpotRatio, "spot price as a fraction of on-demand")
	f.Float64Var(&cfg.InterruptionRate, "interruption-rate", cfg.InterruptionRate, "chance per spot node-hour that the provider reclaims it")
	f.DurationVar(&cfg.Notice, "notice", cfg.Notice, "how long a reclaimed spot machine lives after its notice")
	f.StringVar(&spotQoS, "spot-qos", strings.Join(cfg.SpotQoS, ","), "trace QoS classes whose jobs allow spot (LS, BE, Burstable, Guaranteed)")
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the interruptions")
	f.StringVar(&format, "format", "table", "output: table or json")
	return cmd
}
