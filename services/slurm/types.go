package slurm

import "time"

// Partition is a Slurm partition: what Gantry shows as a pool.
type Partition struct {
	Name       string
	State      string // UP, DOWN, DRAIN, INACTIVE
	Default    bool
	MaxTime    time.Duration // 0: unlimited
	Nodes      string        // hostlist expression as Slurm prints it, e.g. gpu[01-16]
	TotalCPUs  int
	TotalNodes int
	GPUs       int // GPUs configured on its nodes (gres/gpu in its TRES)
}

// Node is a Slurm node and its GPUs: what Gantry shows as a read-only node.
type Node struct {
	Cluster        string // the ClusterName of its cluster
	Name           string
	Partitions     []string
	State          string // as sinfo prints it, e.g. idle, mixed, allocated, down*, drained
	Reason         string // why it is down or drained; empty otherwise
	CPUs           int
	AllocCPUs      int
	MemoryMiB      int64
	AllocMemoryMiB int64
	GPUs           []GRES // configured
	GPUsUsed       []GRES // allocated now, by Gantry's jobs and everyone else's
}

// GRES is a count of GPUs of one type ("" when the site does not type them).
type GRES struct {
	Type  string
	Count int
}

// Job is a Slurm job as squeue shows it.
type Job struct {
	ID        string
	Name      string
	State     string // PENDING, RUNNING, COMPLETED, ...
	Reason    string // why it waits or how it ended: Resources, Priority, JobHeldUser, NonZeroExitCode, ...
	Partition string
	QOS       string
	User      string
	Account   string
	Submit    time.Time
	Start     time.Time // zero while pending (or Slurm's estimate)
	End       time.Time
	Elapsed   time.Duration
	TimeLimit time.Duration // 0: unlimited
	NodeList  string
	Nodes     int
	CPUs      int
	MemoryMiB int64
	TRES      string // what it asked per node, e.g. gres:gpu:a100:2
	Comment   string
}

// Ended reports whether the job is over (completed, failed, cancelled, ...): squeue
// lists such jobs for a while after.
func (j Job) Ended() bool {
	phase, ok := phaseOf(j.State)
	return ok && phase == phaseDone
}

// Run is one run of a job as sacct accounts it: a job that Slurm requeued (after a
// preemption or a node failure) has one Run per time it started. This is the record
// the cost ledger takes: what was allocated, and for how long.
type Run struct {
	JobID     string
	Name      string
	State     string // COMPLETED, FAILED, PREEMPTED, ... (PENDING/RUNNING for the current one)
	ExitCode  int
	Signal    int // the signal that ended it, 0 when none
	Submit    time.Time
	Start     time.Time // zero when it never started
	End       time.Time // zero while running
	Elapsed   time.Duration
	Alloc     TRES
	Partition string
	QOS       string
	NodeList  string
	User      string
	Account   string
}

// Ran reports whether the run was given nodes: sacct gives a job cancelled while
// pending a start time too (when it was cancelled), but no node.
func (r Run) Ran() bool { return !r.Start.IsZero() && r.NodeList != "" }

// TRES is what Slurm allocated ("trackable resources").
type TRES struct {
	CPUs       int
	MemoryMiB  int64
	Nodes      int
	GPUs       int
	GPUsByType map[string]int // e.g. a100: 2; empty when untyped
	Billing    int64
}

// Job phases, from Slurm's many states.
const (
	phasePending = iota
	phaseRunning
	phaseDone
)

// phaseOf maps a Slurm job state to its phase; ok is false for a state this package
// does not know.
func phaseOf(state string) (phase int, ok bool) {
	switch state {
	case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "RESV_DEL_HOLD":
		return phasePending, true
	case "RUNNING", "COMPLETING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "RESIZING", "STOPPED":
		return phaseRunning, true
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
		"BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED":
		return phaseDone, true
	}
	return 0, false
}
