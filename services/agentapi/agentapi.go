package agentapi

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// Paths of the agent protocol, relative to the server URL.
const (
	PathJoin      = "/api/v1/agent/join"
	PathHeartbeat = "/api/v1/agent/heartbeat"
	PathLeases    = "/api/v1/agent/leases"
	PathReport    = "/api/v1/agent/reports"
	PathLogs      = "/api/v1/agent/logs"
	// PathJobToken mints a new job token for an attempt not started yet.
	PathJobToken = "/api/v1/agent/job-token"
)

// Error codes the server answers with besides the generic ones.
const (
	// CodeStaleAttempt: the report names an attempt that is no longer current
	// (the job was rescheduled or ended); the agent must stop that attempt.
	CodeStaleAttempt = "stale_attempt"
	// CodeLogOffset: a log chunk starts past the end the server has; the body's
	// next_offset says where to resume.
	CodeLogOffset = "log_offset"
	// CodeUnauthorized: the credential or join token is wrong, expired or revoked.
	CodeUnauthorized = "unauthorized"
)

// Runtimes a node may run jobs with.
const (
	RuntimeProcess = "process"
	RuntimeDocker  = "docker"
	RuntimePodman  = "podman"
)

// Stop reasons.
const (
	StopCancel  = "cancel"
	StopPreempt = "preempt"
	StopDrain   = "drain"
	// StopGovernance: a governance rule stopped the job; it is held until released.
	StopGovernance = "governance"
	// StopReplica: another replica of the same gang attempt failed or was lost.
	StopReplica = "replica"
	// StopRelease: a governance rule gives an idle job's GPUs back to the pool; the job
	// checkpoints and goes back to the queue.
	StopRelease = "release"
	// StopReclaim: the node's provider reclaims it (a spot interruption); the job
	// checkpoints within the notice and resumes elsewhere.
	StopReclaim = "reclaim"
	// StopHold: a person held the job while it ran; it checkpoints, stops and stays
	// held until released.
	StopHold = "hold"
)

// Report events.
const (
	EventStarted = "started"
	EventExited  = "exited"
)

// Log streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// MaxLogChunk bounds the data of one log chunk (bytes).
const MaxLogChunk = 256 << 10

// JoinRequest registers a node with a join token.
type JoinRequest struct {
	JoinToken    string        `json:"join_token"`
	Name         string        `json:"name"`
	AgentVersion string        `json:"agent_version"`
	Runtime      string        `json:"runtime"`
	CPUMilli     int64         `json:"cpu_milli"`
	MemoryMiB    int64         `json:"memory_mib"`
	ScratchMiB   int64         `json:"scratch_mib"`
	Inventory    gpu.Inventory `json:"inventory"`
}

// JoinResponse carries the node credential, shown once; the server keeps only its hash.
type JoinResponse struct {
	NodeID     int64  `json:"node_id"`
	Name       string `json:"name"`
	Credential string `json:"credential"`
	Timing
}

// Timing is what the server wants from the agent's clocks.
type Timing struct {
	HeartbeatIntervalMS int64 `json:"heartbeat_interval_ms"`
	// NodeTimeoutMS is how long the server waits for a heartbeat before it
	// declares the node lost and requeues its jobs; the agent stops its own jobs
	// before then when it cannot reach the server (self-fencing).
	NodeTimeoutMS int64 `json:"node_timeout_ms"`
	// KillGraceMS is how long a stopped job has between SIGTERM and SIGKILL.
	KillGraceMS int64 `json:"kill_grace_ms"`
}

// HeartbeatRequest says the node is alive, with its telemetry.
type HeartbeatRequest struct {
	Sample *gpu.Sample `json:"sample,omitempty"`
	// Jobs is the CPU the node's attempts used since the previous report, every
	// few heartbeats.
	Jobs []JobUsage `json:"jobs,omitempty"`
	// Inventory is sent when it changed since the last heartbeat (a MIG change).
	Inventory *gpu.Inventory `json:"inventory,omitempty"`
	// Interruption is set once the node's provider announced it reclaims the machine.
	Interruption *Interruption `json:"interruption,omitempty"`
	// Images are the images a container node holds, of those it was asked to pre-pull
	// or its jobs ran; sent when they changed since the server last took them.
	Images *ImageReport `json:"images,omitempty"`
}

// ImageReport lists the image references a node holds, as the catalog and the
// jobs name them.
type ImageReport struct {
	Pulled []string `json:"pulled"`
}

// Bounds of an image report.
const (
	MaxImages      = 1024
	MaxImageRefLen = 512
)

// Interruption is a provider's notice that it takes the machine away at Deadline
// (a spot interruption), as the agent read it from the instance metadata.
type Interruption struct {
	Deadline time.Time `json:"deadline"`
	Reason   string    `json:"reason"`
}

// JobUsage is what one attempt used: its mean CPU since the previous report.
type JobUsage struct {
	AttemptRef
	CPUMilli int64 `json:"cpu_milli"`
}

// Bounds of a heartbeat's usage reports: a node runs a few hundred attempts at most,
// and no job uses more than a machine's cores.
const (
	MaxJobUsages    = 1024
	MaxUsedCPUMilli = 1 << 24
)

// HeartbeatResponse tells the agent its node's state.
type HeartbeatResponse struct {
	NodeState       string `json:"node_state"`
	NodeStateReason string `json:"node_state_reason,omitempty"`
	// TelemetryError says why the heartbeat's sample was refused; the heartbeat itself counted.
	TelemetryError string `json:"telemetry_error,omitempty"`
	// PrePull are the images a docker or podman node should hold before a job needs
	// them (the catalog's pre-pull marks); none for a process node.
	PrePull []string `json:"pre_pull,omitempty"`
	Timing
}

// AttemptRef names one replica of one attempt of a job.
type AttemptRef struct {
	JobID   int64 `json:"job_id"`
	Attempt int   `json:"attempt"`
	Replica int   `json:"replica"`
}

// String is "job 7 attempt 2 replica 0".
func (a AttemptRef) String() string {
	return fmt.Sprintf("job %d attempt %d replica %d", a.JobID, a.Attempt, a.Replica)
}

// Leases is every allocation the server wants on the node now.
type Leases struct {
	// Version changes whenever the set changes; the agent sends it back so that a
	// poll waits until there is something new.
	Version     string  `json:"version"`
	Allocations []Lease `json:"allocations"`
}

// Lease is one allocation: what to run, where, and whether to stop it.
type Lease struct {
	AttemptRef
	JobName string            `json:"job_name"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	// SecretEnv are the job's secret variables: for the job's environment only, never
	// logged or kept in a file another user of the node may read.
	SecretEnv  map[string]string `json:"secret_env,omitempty"`
	Image      string            `json:"image,omitempty"`
	Devices    []Device          `json:"devices,omitempty"`
	CPUMilli   int64             `json:"cpu_milli"`
	MemoryMiB  int64             `json:"memory_mib"`
	ScratchMiB int64             `json:"scratch_mib"`
	// Started is set once the server knows the attempt started, so that an agent
	// never starts it a second time.
	Started bool `json:"started,omitempty"`
	// JobToken is the token the job reports its metrics with (GANTRY_JOB_TOKEN). It
	// comes once, in the answer that first lists the allocation; an agent that lost it
	// asks for another at PathJobToken. Never log or store it but for the job.
	JobToken string `json:"job_token,omitempty"`
	// Stop is set when the server wants the attempt stopped.
	Stop *Stop `json:"stop,omitempty"`
}

// Device is a GPU given to an allocation: the whole card, a share of it, or one
// of its MIG instances.
type Device struct {
	UUID  string `json:"uuid"` // the GPU
	Milli int64  `json:"milli"`
	// MemoryMiB is the GPU memory reserved: the whole card, or a share's limit.
	MemoryMiB int64 `json:"memory_mib,omitempty"`
	// MIGUUID and MIGProfile name the MIG instance given, when one is.
	MIGUUID    string `json:"mig_uuid,omitempty"`
	MIGProfile string `json:"mig_profile,omitempty"`
}

// Visible is what CUDA_VISIBLE_DEVICES names for the device.
func (d Device) Visible() string {
	if d.MIGUUID != "" {
		return d.MIGUUID
	}
	return d.UUID
}

// Stop asks for an attempt to end: a checkpoint request and GraceMS to save
// one (unless the reason is cancel), then SIGTERM, then SIGKILL.
type Stop struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	GraceMS int64  `json:"grace_ms"`
	// CheckpointSaved is set once the job said, through the API, that it saved its
	// checkpoint: the rest of the grace need not be waited out.
	CheckpointSaved bool `json:"checkpoint_saved,omitempty"`
}

// Report tells the server that an attempt started or ended.
type Report struct {
	AttemptRef
	Event string `json:"event"`
	// ExitCode of an exited attempt: the command's status, or -1 when it was
	// killed by a signal or its supervisor vanished (Message says which). A
	// container runtime reports a job killed by signal n as 128+n, Signal naming it.
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Message  string `json:"message,omitempty"`
}

// JobTokenResponse carries a job token minted again for an attempt.
type JobTokenResponse struct {
	JobToken string `json:"job_token"`
}

// LogChunk is a piece of one output stream of an attempt, at a byte offset.
type LogChunk struct {
	AttemptRef
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// LogAck says how much of the stream the server holds: the next offset to send.
// Full says the server keeps no more of the stream (it reached the log limit, or the
// job's output is past the log retention), so the agent need send no more (a server
// that does not say so takes and drops it).
type LogAck struct {
	NextOffset int64 `json:"next_offset"`
	Full       bool  `json:"full,omitempty"`
}

// ErrorBody is the server's error answer: {"error": {"code", "message", "field"}}.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	} `json:"error"`
	// NextOffset accompanies CodeLogOffset.
	NextOffset *int64 `json:"next_offset,omitempty"`
}

// MaxNameLen bounds a node name.
const MaxNameLen = 63

// Validate refuses a join request that cannot register a node.
func (r *JoinRequest) Validate() error {
	if r.JoinToken == "" {
		return models.Invalid("join_token", "is required: create one with `gantry join-token create`")
	}
	if err := ValidNodeName(r.Name); err != nil {
		return &models.FieldError{Field: "name", Message: err.Error()}
	}
	switch r.Runtime {
	case RuntimeProcess, RuntimeDocker, RuntimePodman:
	default:
		return models.Invalid("runtime", "%q is not a runtime: want process, docker or podman", r.Runtime)
	}
	if r.CPUMilli < 0 || r.MemoryMiB < 0 || r.ScratchMiB < 0 {
		return models.Invalid("cpu_milli", "resources cannot be negative")
	}
	return validInventory("inventory", r.Inventory)
}

// ValidNodeName checks a node name: 1-63 of a-z, 0-9, '-', '.', '_', starting with a letter or digit.
func ValidNodeName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%q must be 1 to %d characters", name, MaxNameLen)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || i > 0 && (c == '-' || c == '.' || c == '_')
		if !ok {
			return fmt.Errorf("%q may hold only letters, digits, '-', '.' and '_', and must start with a letter or digit", name)
		}
	}
	return nil
}

func validInventory(field string, inv gpu.Inventory) error {
	seen := map[string]bool{}
	for i, d := range inv.Devices {
		f := fmt.Sprintf("%s.devices[%d]", field, i)
		if d.UUID == "" || len(d.UUID) > 128 || !utf8.ValidString(d.UUID) {
			return models.Invalid(f+".uuid", "is required (at most 128 characters)")
		}
		if seen[d.UUID] {
			return models.Invalid(f+".uuid", "%s appears twice", d.UUID)
		}
		seen[d.UUID] = true
		if d.MemoryMiB < 0 {
			return models.Invalid(f+".memory_mib", "cannot be negative")
		}
		if d.Index < 0 {
			return models.Invalid(f+".index", "cannot be negative")
		}
		for j, m := range d.MIGInstances {
			if m.UUID == "" || seen[m.UUID] {
				return models.Invalid(fmt.Sprintf("%s.mig_instances[%d].uuid", f, j), "is required and must be unique")
			}
			seen[m.UUID] = true
		}
	}
	return nil
}

// Validate refuses a heartbeat that cannot be recorded.
func (r *HeartbeatRequest) Validate() error {
	if r.Inventory != nil {
		if err := validInventory("inventory", *r.Inventory); err != nil {
			return err
		}
	}
	if i := r.Interruption; i != nil {
		switch {
		case i.Deadline.IsZero():
			return models.Invalid("interruption.deadline", "is required: when the provider takes the machine")
		case i.Reason == "" || len(i.Reason) > 500 || !utf8.ValidString(i.Reason):
			return models.Invalid("interruption.reason", "is required (at most 500 characters)")
		}
	}
	if im := r.Images; im != nil {
		if len(im.Pulled) > MaxImages {
			return models.Invalid("images.pulled", "has %d images: at most %d", len(im.Pulled), MaxImages)
		}
		for i, ref := range im.Pulled {
			if ref == "" || len(ref) > MaxImageRefLen || !utf8.ValidString(ref) || strings.ContainsAny(ref, " \t\r\n") {
				return models.Invalid(fmt.Sprintf("images.pulled[%d]", i), "must be an image reference of 1 to %d characters without spaces", MaxImageRefLen)
			}
		}
	}
	if len(r.Jobs) > MaxJobUsages {
		return models.Invalid("jobs", "has %d attempts: at most %d", len(r.Jobs), MaxJobUsages)
	}
	for i, u := range r.Jobs {
		if err := u.AttemptRef.Validate(); err != nil {
			var fe *models.FieldError
			if errors.As(err, &fe) {
				return models.Invalid(fmt.Sprintf("jobs[%d].%s", i, fe.Field), "%s", fe.Message)
			}
			return err
		}
		if u.CPUMilli < 0 || u.CPUMilli > MaxUsedCPUMilli {
			return models.Invalid(fmt.Sprintf("jobs[%d].cpu_milli", i), "is %d: want 0 to %d", u.CPUMilli, MaxUsedCPUMilli)
		}
	}
	return nil
}

// Validate refuses a reference that cannot name an attempt.
func (a AttemptRef) Validate() error {
	switch {
	case a.JobID <= 0:
		return models.Invalid("job_id", "must be a positive job id")
	case a.Attempt <= 0:
		return models.Invalid("attempt", "must be a positive attempt number")
	case a.Replica < 0:
		return models.Invalid("replica", "cannot be negative")
	}
	return nil
}

// Validate refuses a report that cannot be applied.
func (r *Report) Validate() error {
	if err := r.AttemptRef.Validate(); err != nil {
		return err
	}
	switch r.Event {
	case EventStarted:
		if r.ExitCode != nil {
			return models.Invalid("exit_code", "is only for an exited event")
		}
	case EventExited:
		if r.ExitCode == nil {
			return models.Invalid("exit_code", "is required for an exited event")
		}
		if *r.ExitCode < -1 || *r.ExitCode > 255 {
			return models.Invalid("exit_code", "%d is not an exit status: want -1 to 255", *r.ExitCode)
		}
	default:
		return models.Invalid("event", "%q is not an event: want started or exited", r.Event)
	}
	if len(r.Message) > 4096 || !utf8.ValidString(r.Message) {
		return models.Invalid("message", "must be UTF-8 text of at most 4096 bytes")
	}
	if len(r.Signal) > 32 || strings.ContainsAny(r.Signal, "\n\r") {
		return models.Invalid("signal", "must be a signal name")
	}
	return nil
}

// Validate refuses a log chunk that cannot be stored.
func (c *LogChunk) Validate() error {
	if err := c.AttemptRef.Validate(); err != nil {
		return err
	}
	switch {
	case c.Stream != StreamStdout && c.Stream != StreamStderr:
		return models.Invalid("stream", "%q is not a stream: want stdout or stderr", c.Stream)
	case c.Offset < 0:
		return models.Invalid("offset", "cannot be negative")
	case len(c.Data) == 0:
		return models.Invalid("data", "is empty")
	case len(c.Data) > MaxLogChunk:
		return models.Invalid("data", "holds %d bytes; at most %d per chunk", len(c.Data), MaxLogChunk)
	}
	return nil
}
