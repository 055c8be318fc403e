package scheduler

import "time"

// Node is one machine as the snapshot reports it: its allocatable capacity. What is in
// use follows from the running allocations, so there is one source of truth for usage.
type Node struct {
	ID     string
	Pool   string
	Region string // the pool's region, for data residency
	Labels map[string]string
	// Confidential is set when the node's GPUs run in confidential-computing mode.
	Confidential bool
	// WholeGPUs nodes give GPUs only whole, never a share or a MIG slice: a Slurm
	// node, whose GRES Slurm allocates by the card.
	WholeGPUs bool
	// Spot nodes may be reclaimed by their provider, or belong to a pool that takes
	// only jobs that allow spot; jobs that do not allow spot never land on them.
	Spot     bool
	Cordoned bool // accepts no new work
	// Runs says which jobs the node's runtime starts: plain commands, container
	// images, or both (the zero value).
	Runs Runs
	// PriceMicros is what an hour of the whole node costs (0: unknown or owned).
	PriceMicros int64
	CPUMilli    int64
	RAMMiB      int64
	ScratchMiB  int64
	GPUs        []GPU
}

// Runs is what a node's runtime starts. A plain command runs on the node itself (the
// process runtime), so a container runtime cannot honour it; a container image needs
// docker or podman, and the process runtime would run the command outside it.
type Runs uint8

// What a node runs.
const (
	RunsBoth       Runs = iota // both: Slurm with a container plugin, a pool template
	RunsPlain                  // plain commands only: the process runtime, Slurm without a container plugin
	RunsContainers             // container images only: the docker and podman runtimes
)

// Starts reports whether a node that runs r starts a job that names a container
// image (container) or runs a plain command (!container).
func (r Runs) Starts(container bool) bool {
	switch r {
	case RunsPlain:
		return !container
	case RunsContainers:
		return container
	}
	return true
}

// GPU is one card on a node.
type GPU struct {
	Index     int
	UUID      string
	Model     string
	MemoryMiB int64
	// NVLinkPeers are the device indexes on the same node this card has NVLink to.
	NVLinkPeers []int
	// MIG lists the card's configured MIG instances; a MIG-enabled card is only
	// schedulable through its slices, never whole or as a fraction.
	MIG []MIGSlice
}

// MIGSlice is one MIG instance of a card, as NVML reports it.
type MIGSlice struct {
	ID        string // the MIG device UUID
	Profile   string // e.g. "1g.10gb", "3g.40gb"
	MemoryMiB int64
}

// Kind is what a job does; placement may steer kinds to GPU classes.
type Kind string

// Job kinds.
const (
	KindTraining  Kind = "training"
	KindInference Kind = "inference"
	KindBatch     Kind = "batch"
)

// Request is everything a submitter asks for. Resources are per replica.
type Request struct {
	GPUs int // whole GPUs per replica, 0..8; 1 with GPUMilli for a share
	// GPUMilli asks for a share of one GPU (1..999 milli-GPU); 0 means whole GPUs.
	GPUMilli int
	// GPUMemoryMiB is the minimum card memory for whole GPUs and the memory limit of a share.
	GPUMemoryMiB int64
	// GPUModels lists acceptable models (e.g. A100, H100); empty accepts any model.
	GPUModels []string
	// MIGProfile asks for one MIG slice of this profile (e.g. "1g.10gb") instead of GPUs.
	MIGProfile string
	// NVLink asks that a replica's whole GPUs (two or more) be joined by NVLink, each
	// to every other: a job whose GPUs exchange gradients every step.
	NVLink     bool
	CPUMilli   int64
	RAMMiB     int64
	ScratchMiB int64
	// Container is set when the job names a container image; a job without one runs
	// a plain command. Each needs a node that runs it (Node.Runs).
	Container bool
	// Replicas > 1 makes a gang: all replicas start together or none does.
	Replicas        int
	Class           string // priority class name
	Preemptible     bool
	SpotAllowed     bool
	Kind            Kind
	ExpectedRuntime time.Duration // 0 = unknown
	// Policy is the project's placement policy: the pools and regions it may use, and
	// whether only confidential-computing nodes will do.
	Policy Policy
	// Pool and NodeSelector restrict the nodes; empty means any.
	Pool         string
	NodeSelector map[string]string
}

// Policy is a project's placement policy: it restricts the nodes the project's jobs
// may use; empty lists allow any.
type Policy struct {
	Pools            []string
	Regions          []string
	ConfidentialOnly bool
}

// any reports whether the placement restricts nothing.
func (p Policy) any() bool {
	return len(p.Pools) == 0 && len(p.Regions) == 0 && !p.ConfidentialOnly
}

// Job is a pending job: who asked, when, and for what.
type Job struct {
	ID   string
	Team string
	// SubmitTime starts the ageing clock; a requeued job keeps its original time.
	SubmitTime time.Time
	Request    Request
}

// DeviceAssignment is one device given to a replica.
type DeviceAssignment struct {
	GPUIndex int
	UUID     string
	Model    string
	// Milli is the share of the card: 1000 for a whole card.
	Milli int
	// MemoryMiB is the card memory reserved: the whole card, or the share's limit.
	MemoryMiB int64
	// MIGSlice and MIGProfile are set when a MIG instance was assigned.
	MIGSlice   string
	MIGProfile string
}

// ReplicaPlacement puts one replica on one node.
type ReplicaPlacement struct {
	Replica    int
	NodeID     string
	Devices    []DeviceAssignment
	CPUMilli   int64
	RAMMiB     int64
	ScratchMiB int64
}

// GPUMilli is the milli-GPU the replica holds.
func (r ReplicaPlacement) GPUMilli() int64 {
	var s int64
	for _, d := range r.Devices {
		s += int64(d.Milli)
	}
	return s
}

// Placement is the decision for one job: every replica, or nothing.
type Placement struct {
	JobID    string
	Replicas []ReplicaPlacement
}

// Allocation is a running replica: the job it belongs to and where it runs.
type Allocation struct {
	Job     Job
	Replica ReplicaPlacement
	// StartTime is when it started; CheckpointTime its last checkpoint (zero: none).
	StartTime      time.Time
	CheckpointTime time.Time
}

// expectedEnd is when the allocation should finish, or zero when unknown.
func (a Allocation) expectedEnd() time.Time {
	if a.Job.Request.ExpectedRuntime <= 0 || a.StartTime.IsZero() {
		return time.Time{}
	}
	return a.StartTime.Add(a.Job.Request.ExpectedRuntime)
}

// AnyModel is the Quota.Model that covers every model without a quota of its own.
const AnyModel = ""

// Quota is a team's quota for one GPU model (or AnyModel), after Kueue's ClusterQueue
// with one flavor per model: for each resource, Nominal is guaranteed; up to
// BorrowingLimit more may be borrowed from the cohort's entries for the same model; up to
// LendingLimit of the unused nominal is lent to them. A negative limit means unlimited.
// Nominal, BorrowingLimit and LendingLimit are the GPU quota in milli-GPU. CPU
// (milli-cores) and RAM (MiB) count what the team's replicas on this model's GPUs take,
// and for AnyModel also its replicas without GPUs; a zero CPU or RAM nominal leaves that
// resource unlimited.
type Quota struct {
	Team           string
	Model          string
	Cohort         string
	Nominal        int64
	BorrowingLimit int64
	LendingLimit   int64
	CPU            ResourceQuota
	RAM            ResourceQuota
}

// ResourceQuota is one resource's quota in an entry, as Kueue's ResourceQuota: nominal,
// borrowing and lending limits (negative: unlimited).
type ResourceQuota struct {
	Nominal        int64
	BorrowingLimit int64
	LendingLimit   int64
}

// UsageRecord is past use by a team over [Start, End), for fair share.
type UsageRecord struct {
	Team     string
	Start    time.Time
	End      time.Time
	GPUMilli int64
	CPUMilli int64
	RAMMiB   int64
}

// Snapshot is the scheduler's whole input: the cluster, the queue, quotas, history and
// the current time as a value.
type Snapshot struct {
	Now     time.Time
	Nodes   []Node
	Running []Allocation
	Pending []Job
	Quotas  []Quota
	Usage   []UsageRecord
	// Workload is the observed distribution of request shapes; empty derives it from
	// the running and pending jobs.
	Workload Workload
}

// Preemption evicts a running job to make room for a pending one.
type Preemption struct {
	JobID  string
	Team   string
	Class  string
	For    string // the pending job that needs the room
	Reason string
}

// Unplaced is a pending job the plan does not start, with why.
type Unplaced struct {
	JobID       string
	Explanation Explanation
}

// Plan is the scheduler's whole output for one cycle.
type Plan struct {
	Placements  []Placement
	Preemptions []Preemption
	Unplaced    []Unplaced
	// Reservation is set when the head of the queue is blocked: where and when it will
	// start; backfilled jobs never delay it.
	Reservation *Reservation
}

// Reservation holds room for a blocked job.
type Reservation struct {
	JobID   string
	NodeIDs []string
	// Start is the earliest start the running jobs' expected ends allow; zero when unknown.
	Start time.Time
}
