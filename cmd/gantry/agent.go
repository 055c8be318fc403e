package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/agent"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// agentOpts are the flags of `gantry agent`.
type agentOpts struct {
	server, joinToken, dataDir, name, runtime string
	simulateGPUs, checkpointDir               string
	interruptionURL, interruptionFormat       string
	containerCLI, containerNetwork            string
	cpuMilli, memoryMiB, scratchMiB           int64
	pollWait, interruptionPoll, pullTimeout   time.Duration
	probe                                     bool
}

func newAgentCmd(g *globalOpts) *cobra.Command {
	var o agentOpts
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: join the server, report the GPUs, run jobs",
		Long: `Run the node agent on a GPU node.

The first start joins the server with --join-token (create one with
` + "`gantry join-token create`" + ` on the server) and keeps the node's credential in
--data-dir; later starts need only --server and --data-dir. Jobs run under a
supervisor of their own, so they keep running while the agent restarts.

--runtime process runs each job's command on the node itself; docker and podman
run it in a container of the job's image (pulled when the node lacks it, within
--pull-timeout), with its GPUs (docker: --gpus through the NVIDIA container
toolkit; podman: CDI devices named by UUID), CPU and memory limits, and its
working, scratch and checkpoint directories under /gantry. Images the catalog
marks for pre-pull are pulled before a job needs them.

GPUs are found through NVML. Without an NVIDIA driver the node has no GPUs, unless
--simulate-gpus gives a simulated set (labelled SIMULATED everywhere).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.newLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if o.name == "" {
				o.name = defaultNodeName()
			}
			if err := agentapi.ValidNodeName(o.name); err != nil {
				return usageError{fmt.Errorf("--name %w", err)}
			}
			switch o.runtime {
			case agentapi.RuntimeProcess, agentapi.RuntimeDocker, agentapi.RuntimePodman:
			default:
				return usageError{fmt.Errorf("--runtime %q: want process, docker or podman", o.runtime)}
			}
			gpus, err := openGPUs(o.simulateGPUs, o.name, log)
			if err != nil {
				return err
			}
			defer gpus.Close()
			if o.probe {
				return probe(cmd, gpus)
			}
			if o.server == "" {
				return usageError{errors.New("--server is required: the URL of the Gantry server")}
			}
			shim, err := shimCommand()
			if err != nil {
				return err
			}
			a, err := agent.New(agent.Config{
				Server: o.server, JoinToken: o.joinToken, DataDir: o.dataDir, Name: o.name, Runtime: o.runtime,
				Version: version, Shim: shim, GPUs: gpus, CPUMilli: o.cpuMilli, MemoryMiB: o.memoryMiB,
				ScratchMiB: o.scratchMiB, CheckpointRoot: o.checkpointDir, PollWait: o.pollWait,
				InterruptionURL: o.interruptionURL, InterruptionFormat: o.interruptionFormat, InterruptionPoll: o.interruptionPoll,
				ContainerCLI: o.containerCLI, ContainerNetwork: o.containerNetwork, PullTimeout: o.pullTimeout,
				HTTP: &http.Client{}, Log: log,
			})
			if err != nil {
				return err
			}
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "URL of the Gantry server, e.g. https://gantry.example.com")
	f.StringVar(&o.joinToken, "join-token", "", "join token for the first start (then the credential in --data-dir is used)")
	f.StringVar(&o.dataDir, "data-dir", "./gantry-agent", "directory of the node credential, running jobs' files and checkpoints")
	f.StringVar(&o.name, "name", "", "node name (default: the host name)")
	f.StringVar(&o.runtime, "runtime", agentapi.RuntimeProcess, "job runtime: process, docker or podman")
	f.StringVar(&o.containerCLI, "container-cli", "", "the docker or podman command (default: the runtime's name on PATH)")
	f.StringVar(&o.containerNetwork, "container-network", "host", "network of job containers (docker/podman --network: host, none, bridge, or a network's name)")
	f.DurationVar(&o.pullTimeout, "pull-timeout", 10*time.Minute, "longest an image pull may take before the job fails")
	f.StringVar(&o.simulateGPUs, "simulate-gpus", "", `simulate GPUs instead of NVML, e.g. "2xA100-80GB,4xL4-24GB"`)
	f.StringVar(&o.checkpointDir, "checkpoint-dir", "", "where jobs keep checkpoints, one directory per job (default: DATA-DIR/checkpoints; use shared storage to resume on other nodes)")
	f.Int64Var(&o.cpuMilli, "cpu-milli", 0, "CPU offered to jobs in milli-cores (default: all CPUs)")
	f.Int64Var(&o.memoryMiB, "memory-mib", 0, "memory offered to jobs in MiB (default: all memory)")
	f.Int64Var(&o.scratchMiB, "scratch-mib", 0, "scratch disk offered to jobs in MiB (default: free space of --data-dir)")
	f.DurationVar(&o.pollWait, "poll-wait", 25*time.Second, "how long one lease poll waits on the server for work")
	f.BoolVar(&o.probe, "probe", false, "print the GPUs found and one sample of their telemetry, then exit")
	f.StringVar(&o.interruptionURL, "interruption-url", "", "spot interruption notice to watch: http://169.254.169.254/latest/meta-data/spot/instance-action (AWS), "+
		"http://metadata.google.internal/computeMetadata/v1/instance/preempted (GCP), http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01 (Azure)")
	f.StringVar(&o.interruptionFormat, "interruption-format", "", "format of --interruption-url: aws, gcp or azure (default: from the URL)")
	f.DurationVar(&o.interruptionPoll, "interruption-poll", 5*time.Second, "how often --interruption-url is read")
	cmd.AddCommand(newAgentShimCmd())
	return cmd
}

// newAgentShimCmd is the supervisor of one attempt, started by the agent itself.
func newAgentShimCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "shim DIR",
		Short:  "Supervise one job attempt (started by the agent)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if code := agent.RunShim(args[0]); code != 0 {
				return fmt.Errorf("supervisor of %s failed", args[0])
			}
			return nil
		},
	}
}

// shimCommand is how the agent starts a supervisor: this same binary.
func shimCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the gantry binary for job supervisors: %w", err)
	}
	return []string{exe, "agent", "shim"}, nil
}

// openGPUs returns simulated GPUs when spec is set, else NVML, else none.
func openGPUs(spec, node string, log *slog.Logger) (gpu.Source, error) {
	if spec != "" {
		s, err := gpu.NewSimulated(spec, node, time.Now)
		if err != nil {
			return nil, usageError{fmt.Errorf("--simulate-gpus: %w", err)}
		}
		log.Warn("using SIMULATED GPUs", "spec", spec)
		return s, nil
	}
	s, err := gpu.OpenNVML(time.Now)
	if errors.Is(err, gpu.ErrNoDriver) {
		log.Warn("no NVIDIA driver: this node offers no GPUs (use --simulate-gpus to simulate some)", "why", err)
		return agent.NoGPUs(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("open NVML: %w", err)
	}
	return s, nil
}

func probe(cmd *cobra.Command, gpus gpu.Source) error {
	ctx := cmd.Context()
	inv, err := gpus.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discover GPUs: %w", err)
	}
	s, err := gpus.Sample(ctx)
	if err != nil {
		return fmt.Errorf("sample GPUs: %w", err)
	}
	fmt.Fprint(cmd.OutOrStdout(), gpu.Describe(inv, s))
	return nil
}

// defaultNodeName is the host name, made into a valid node name.
func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "node"
	}
	h = strings.ToLower(strings.SplitN(h, ".", 2)[0])
	var b strings.Builder
	for _, c := range h {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "node"
	}
	return b.String()
}
