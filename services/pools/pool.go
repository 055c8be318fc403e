package pools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/slurm"
)

// Providers a pool may name.
const (
	ProviderStatic = "static" // agents join by hand; nothing to create
	ProviderExec   = "exec"   // operator scripts create and delete machines
	ProviderSlurm  = "slurm"  // Slurm places the jobs (services/slurm)
)

// Providers lists the providers in the order messages name them.
var Providers = []string{ProviderStatic, ProviderExec, ProviderSlurm}

// CapacityTypes lists the capacity types a pool may have.
var CapacityTypes = []string{models.CapacityOwned, models.CapacityOnDemand, models.CapacitySpot}

// Limits of a pool's definition; larger values are typos.
const (
	maxPoolNameLen = 40 // node names are the pool's name and a suffix
	maxNodesLimit  = 10_000
	maxTemplateGPU = 16
	minIdleTimeout = time.Minute
	maxIdleTimeout = 7 * 24 * time.Hour
)

// Template is the machine a pool's provider creates: what its agent will offer.
type Template struct {
	// GPUModel is Gantry's model key (A100-80GB, L4-24GB, …); empty for CPU nodes.
	GPUModel string `json:"gpu_model,omitempty" yaml:"gpu_model"`
	GPUs     int    `json:"gpus,omitempty" yaml:"gpus"`
	// GPUMemoryMiB is the memory of one card; 0 takes the known model's.
	GPUMemoryMiB int64 `json:"gpu_memory_mib,omitempty" yaml:"gpu_memory_mib"`
	// NVLink says the cards are joined by NVLink each to every other (SXM boards with
	// NVSwitch), so that jobs that require it bring up nodes of the pool.
	NVLink     bool              `json:"nvlink,omitempty" yaml:"nvlink"`
	CPUMilli   int64             `json:"cpu_milli" yaml:"cpu_milli"`
	MemoryMiB  int64             `json:"memory_mib" yaml:"memory_mib"`
	ScratchMiB int64             `json:"scratch_mib,omitempty" yaml:"scratch_mib"`
	Labels     map[string]string `json:"labels,omitempty" yaml:"labels"`
	// Runtime is the agent's --runtime on the pool's nodes (process, docker, podman), so
	// that a pool with no node yet is known to start plain commands or container
	// images; empty: not said, counted as starting both.
	Runtime string `json:"runtime,omitempty" yaml:"runtime"`
}

// templateRuntimes are the runtimes a template may name.
var templateRuntimes = []string{agentapi.RuntimeProcess, agentapi.RuntimeDocker, agentapi.RuntimePodman}

// Runs is what the template's nodes start, as the scheduler reads it.
func (t Template) Runs() scheduler.Runs {
	switch t.Runtime {
	case agentapi.RuntimeProcess:
		return scheduler.RunsPlain
	case agentapi.RuntimeDocker, agentapi.RuntimePodman:
		return scheduler.RunsContainers
	}
	return scheduler.RunsBoth
}

// Spec is a pool as an admin writes it (JSON or YAML).
type Spec struct {
	Name         string   `json:"name" yaml:"name"`
	Provider     string   `json:"provider" yaml:"provider"`
	Region       string   `json:"region,omitempty" yaml:"region"`
	Zone         string   `json:"zone,omitempty" yaml:"zone"`
	CapacityType string   `json:"capacity_type" yaml:"capacity_type"`
	SpotOnly     bool     `json:"spot_only,omitempty" yaml:"spot_only"`
	MinNodes     int      `json:"min_nodes" yaml:"min_nodes"`
	MaxNodes     int      `json:"max_nodes" yaml:"max_nodes"`
	Template     Template `json:"template" yaml:"template"`
	// ProviderConfig is the provider's own settings: ExecConfig for exec, slurm.Config for slurm.
	ProviderConfig map[string]any `json:"provider_config,omitempty" yaml:"provider_config"`
	// IdleTimeout is how long a node may have no work before it is scaled down, e.g.
	// "15m"; empty takes the autoscaler's default.
	IdleTimeout string `json:"idle_timeout,omitempty" yaml:"idle_timeout"`
	// DrainStopsJobs lets scale-down checkpoint-stop what still runs on a draining node.
	DrainStopsJobs bool `json:"drain_stops_jobs,omitempty" yaml:"drain_stops_jobs"`
}

// ExecConfig is an exec pool's provider configuration.
type ExecConfig struct {
	// Command is the operator's script and its arguments; the request arrives as JSON on stdin.
	Command []string `json:"command" yaml:"command"`
	// TimeoutSec bounds one call; 0: 120 s.
	TimeoutSec int `json:"timeout_sec,omitempty" yaml:"timeout_sec"`
	// Retries is how many times a failed call is tried again; absent: 2.
	Retries *int `json:"retries,omitempty" yaml:"retries"`
	// BackoffMS is the wait before the first retry, doubled for each next one; 0: 1000.
	BackoffMS int `json:"backoff_ms,omitempty" yaml:"backoff_ms"`
}

func (c ExecConfig) timeout() time.Duration {
	if c.TimeoutSec <= 0 {
		return 120 * time.Second
	}
	return time.Duration(c.TimeoutSec) * time.Second
}

func (c ExecConfig) retries() int {
	if c.Retries == nil {
		return 2
	}
	return *c.Retries
}

func (c ExecConfig) backoff() time.Duration {
	if c.BackoffMS <= 0 {
		return time.Second
	}
	return time.Duration(c.BackoffMS) * time.Millisecond
}

// Validate names the first field that is wrong.
func (c ExecConfig) Validate() error {
	switch {
	case len(c.Command) == 0 || c.Command[0] == "":
		return models.Invalid("provider_config.command", "is required: the script that creates, deletes and lists machines, e.g. [\"/etc/gantry/aws-pool.sh\"]")
	case c.TimeoutSec < 0 || c.TimeoutSec > 3600:
		return models.Invalid("provider_config.timeout_sec", "%d is out of range; allowed: 1 to 3600 seconds (0 for 120)", c.TimeoutSec)
	case c.Retries != nil && (*c.Retries < 0 || *c.Retries > 10):
		return models.Invalid("provider_config.retries", "%d is out of range; allowed: 0 to 10", *c.Retries)
	case c.BackoffMS < 0 || c.BackoffMS > 600_000:
		return models.Invalid("provider_config.backoff_ms", "%d is out of range; allowed: 0 to 600000", c.BackoffMS)
	}
	return nil
}

// ParseExecConfig reads an exec pool's stored configuration strictly.
func ParseExecConfig(raw string) (ExecConfig, error) {
	var c ExecConfig
	if err := strictJSON(raw, &c); err != nil {
		return c, models.Invalid("provider_config", "is not an exec provider configuration: %v", err)
	}
	return c, c.Validate()
}

// ParseTemplate reads a pool's stored node template.
func ParseTemplate(raw string) (Template, error) {
	var t Template
	if raw == "" {
		return t, nil
	}
	if err := strictJSON(raw, &t); err != nil {
		return t, models.Invalid("template", "is not a node template: %v", err)
	}
	return t, nil
}

func strictJSON(raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// CardMemoryMiB is the memory of one of the template's cards.
func (t Template) CardMemoryMiB() int64 {
	if t.GPUMemoryMiB > 0 {
		return t.GPUMemoryMiB
	}
	m, _ := gpu.ModelMemoryMiB(t.GPUModel)
	return m
}

// SimulatedGPUs is the template's cards as `gantry agent --simulate-gpus` takes them.
func (t Template) SimulatedGPUs() string {
	if t.GPUs == 0 {
		return ""
	}
	return fmt.Sprintf("%dx%s", t.GPUs, t.GPUModel)
}

// validate names the first field of the template that is wrong.
func (t Template) empty() bool {
	return t.GPUModel == "" && t.GPUs == 0 && t.GPUMemoryMiB == 0 && t.CPUMilli == 0 && t.MemoryMiB == 0 && t.ScratchMiB == 0 && len(t.Labels) == 0 && t.Runtime == "" && !t.NVLink
}

func (t Template) validate() error {
	switch {
	case t.GPUs < 0 || t.GPUs > maxTemplateGPU:
		return models.Invalid("template.gpus", "%d is out of range; allowed: 0 to %d", t.GPUs, maxTemplateGPU)
	case t.GPUs > 0 && t.GPUModel == "":
		return models.Invalid("template.gpu_model", "is required when the template has GPUs; known models: %s", strings.Join(gpu.KnownModels(), ", "))
	case t.GPUs == 0 && t.GPUModel != "":
		return models.Invalid("template.gpus", "is 0 but gpu_model is %s: give the number of cards", t.GPUModel)
	case t.GPUMemoryMiB < 0:
		return models.Invalid("template.gpu_memory_mib", "%d is negative", t.GPUMemoryMiB)
	case t.NVLink && t.GPUs < 2:
		return models.Invalid("template.nvlink", "joins two or more cards, and gpus is %d", t.GPUs)
	case t.CPUMilli <= 0:
		return models.Invalid("template.cpu_milli", "is required: the CPU the node offers in milli-cores, e.g. 32000")
	case t.MemoryMiB <= 0:
		return models.Invalid("template.memory_mib", "is required: the memory the node offers in MiB, e.g. 262144")
	case t.ScratchMiB < 0:
		return models.Invalid("template.scratch_mib", "%d is negative", t.ScratchMiB)
	case t.Runtime != "" && !slices.Contains(templateRuntimes, t.Runtime):
		return models.Invalid("template.runtime", "%q is not a runtime; allowed: %s (the --runtime its agents run with), or leave it out", t.Runtime, strings.Join(templateRuntimes, ", "))
	}
	if t.GPUs > 0 && t.CardMemoryMiB() == 0 {
		return models.Invalid("template.gpu_memory_mib", "is required for %s, which Gantry does not know; known models: %s",
			t.GPUModel, strings.Join(gpu.KnownModels(), ", "))
	}
	for k, v := range t.Labels {
		if k == "" || len(k) > 63 || len(v) > 63 {
			return models.Invalid("template.labels", "label %q=%q: keys are 1 to 63 characters, values at most 63", k, v)
		}
	}
	return nil
}

// Validate checks the spec and returns the pool row it describes (without ids).
func (s Spec) Validate() (models.NodePool, error) {
	p := models.NodePool{Name: s.Name, Provider: s.Provider, Region: s.Region, Zone: s.Zone, CapacityType: s.CapacityType,
		SpotOnly: s.SpotOnly, MinNodes: s.MinNodes, MaxNodes: s.MaxNodes, DrainStopsJobs: s.DrainStopsJobs}
	if err := validName("name", s.Name, maxPoolNameLen); err != nil {
		return p, err
	}
	if !slices.Contains(Providers, s.Provider) {
		return p, models.Invalid("provider", "%q is not a provider; allowed: %s", s.Provider, strings.Join(Providers, ", "))
	}
	if !slices.Contains(CapacityTypes, s.CapacityType) {
		return p, models.Invalid("capacity_type", "%q is not a capacity type; allowed: %s", s.CapacityType, strings.Join(CapacityTypes, ", "))
	}
	for _, f := range []struct{ field, v string }{{"region", s.Region}, {"zone", s.Zone}} {
		if f.v != "" {
			if err := validName(f.field, f.v, 64); err != nil {
				return p, err
			}
		}
	}
	switch {
	case s.MinNodes < 0:
		return p, models.Invalid("min_nodes", "%d is negative; allowed: 0 to %d", s.MinNodes, maxNodesLimit)
	case s.MaxNodes < 0 || s.MaxNodes > maxNodesLimit:
		return p, models.Invalid("max_nodes", "%d is out of range; allowed: 0 to %d", s.MaxNodes, maxNodesLimit)
	case s.MaxNodes < s.MinNodes:
		return p, models.Invalid("max_nodes", "%d is below min_nodes %d; max_nodes must be at least min_nodes", s.MaxNodes, s.MinNodes)
	}
	if s.Provider == ProviderSlurm {
		// A Slurm pool's nodes are its partition's, as sinfo reports them.
		if !s.Template.empty() {
			return p, models.Invalid("template", "a Slurm pool has no template: its nodes and GPUs come from its partition; remove template")
		}
	} else {
		if err := s.Template.validate(); err != nil {
			return p, err
		}
		tmpl, err := json.Marshal(s.Template)
		if err != nil {
			return p, fmt.Errorf("encode template: %w", err)
		}
		p.Template = string(tmpl)
	}
	var err error
	if s.IdleTimeout != "" {
		d, err := time.ParseDuration(s.IdleTimeout)
		if err != nil || d < minIdleTimeout || d > maxIdleTimeout {
			return p, models.Invalid("idle_timeout", "%q is not a duration from %s to %s, e.g. 15m", s.IdleTimeout, minIdleTimeout, maxIdleTimeout)
		}
		p.IdleTimeoutSec = int(d / time.Second)
	}
	if p.ProviderConfig, err = s.providerConfig(); err != nil {
		return p, err
	}
	return p, nil
}

// providerConfig validates the provider's settings and returns them as stored.
func (s Spec) providerConfig() (string, error) {
	raw := ""
	if len(s.ProviderConfig) > 0 {
		b, err := json.Marshal(s.ProviderConfig)
		if err != nil {
			return "", models.Invalid("provider_config", "cannot be encoded: %v", err)
		}
		raw = string(b)
	}
	switch s.Provider {
	case ProviderExec:
		if raw == "" {
			raw = "{}"
		}
		if _, err := ParseExecConfig(raw); err != nil {
			return "", err
		}
	case ProviderSlurm:
		if _, err := slurm.ParseConfig(raw); err != nil {
			return "", err
		}
	case ProviderStatic:
		if raw != "" {
			return "", models.Invalid("provider_config", "a static pool has no provider settings: its agents join by hand; remove provider_config")
		}
		if s.MinNodes > 0 {
			return "", models.Invalid("min_nodes", "a static pool creates no nodes, so it has no minimum; give 0")
		}
	}
	return raw, nil
}

// NodeLabels are the labels every node of the pool carries: the template's, and the
// pool, region and zone under well-known keys.
func NodeLabels(p models.NodePool, t Template) map[string]string {
	out := maps.Clone(t.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[LabelPool] = p.Name
	out[LabelCapacity] = p.CapacityType
	if p.Region != "" {
		out[LabelRegion] = p.Region
	}
	if p.Zone != "" {
		out[LabelZone] = p.Zone
	}
	return out
}

// Well-known node labels (the region and zone keys are Kubernetes').
const (
	LabelPool     = "gantry.io/pool"
	LabelCapacity = "gantry.io/capacity-type"
	LabelRegion   = "topology.kubernetes.io/region"
	LabelZone     = "topology.kubernetes.io/zone"
)

// validName accepts lower-case letters, digits and inner dashes.
func validName(field, v string, maxLen int) error {
	if v == "" || len(v) > maxLen {
		return models.Invalid(field, "is required: 1 to %d characters (lower-case letters, digits, -)", maxLen)
	}
	for i, c := range v {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(v)-1
		if !ok {
			return models.Invalid(field, "%q may hold only lower-case letters, digits and inner dashes", v)
		}
	}
	return nil
}
