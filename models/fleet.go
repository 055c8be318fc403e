package models

import (
	"encoding/json"
	"time"
)

// Node states.
const (
	NodeReady    = "ready"
	NodeDraining = "draining"
	NodeCordoned = "cordoned"
	NodeLost     = "lost"
	NodeDown     = "down"
)

// NodeStates lists every node state: serving, then leaving service, then out of it.
var NodeStates = []string{NodeReady, NodeDraining, NodeCordoned, NodeLost, NodeDown}

// Capacity types of a pool.
const (
	CapacityOwned    = "owned"
	CapacityOnDemand = "on-demand"
	CapacitySpot     = "spot"
)

// NodePool groups nodes that share a provider, a template and a price.
type NodePool struct {
	ID             int64
	Name           string
	Provider       string // static | exec | slurm
	Region         string
	Zone           string
	CapacityType   string
	SpotOnly       bool
	MinNodes       int
	MaxNodes       int
	Template       string // JSON node template
	ProviderConfig string `json:"-"` // JSON, may hold secrets
	// IdleTimeoutSec is how long a node may stay without work before it is scaled
	// down; 0 takes the autoscaler's default.
	IdleTimeoutSec int
	// DrainStopsJobs lets scale-down checkpoint-stop what still runs on a draining node.
	DrainStopsJobs bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Pool instance states: what Gantry knows of a machine it asked a provider for.
const (
	InstanceRequested = "requested" // asked for; its agent has not joined yet
	InstanceRunning   = "running"   // its agent joined
	InstanceDeleting  = "deleting"  // asked to delete; the provider still lists it
	InstanceDeleted   = "deleted"
	InstanceFailed    = "failed" // never joined, or the provider lost it
)

// PoolInstance is a machine Gantry asked a pool's provider for. The provider's list
// is reconciled against these rows, so a machine nobody asked for is deleted.
type PoolInstance struct {
	ID          int64
	PoolID      int64
	Name        string // the node name its agent joins as
	ProviderID  string
	State       string
	StateReason string
	JoinTokenID *int64
	RequestedAt time.Time
	JoinedAt    *time.Time
	DeletedAt   *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Kinds of pool events.
const (
	PoolScaleUp   = "scale-up"
	PoolScaleDown = "scale-down"
	PoolDeleted   = "deleted"
	PoolHeld      = "held-back" // a scale-up that limits, budgets or cool-downs stopped
	PoolFailed    = "failed"
	PoolReconcile = "reconcile"
	PoolReclaim   = "reclaim"
)

// PoolEvent is one decision about a pool, with its reason in words.
type PoolEvent struct {
	ID     int64
	PoolID *int64
	At     time.Time
	Kind   string
	Nodes  int
	Reason string
	Detail string // JSON
}

// PoolSample is a pool's node count and the pending demand it could serve, at a time.
type PoolSample struct {
	ID              int64
	PoolID          int64
	At              time.Time
	Nodes           int
	Booting         int
	PendingJobs     int
	PendingGPUMilli int64 `gorm:"column:pending_gpu_milli"`
}

// Node is a machine that runs jobs through an agent (or a Slurm node, read-only).
type Node struct {
	ID            int64
	Name          string
	PoolID        *int64
	State         string
	StateReason   string
	DrainDeadline *time.Time
	Labels        string // JSON object
	CPUMilli      int64
	MemoryMiB     int64 `gorm:"column:memory_mib"`
	ScratchMiB    int64 `gorm:"column:scratch_mib"`
	DriverVersion string
	CUDAVersion   string
	Runtime       string // process | docker | podman | slurm
	Simulated     bool
	// Confidential: the GPUs run in confidential-computing mode, as NVML reports (CCState
	// on or off) or, where NVML cannot tell (CCState unknown), as an admin flagged it.
	Confidential    bool
	CCState         string `gorm:"column:cc_state"`
	AgentVersion    string
	CredentialHash  string `json:"-"`
	LastHeartbeatAt *time.Time
	// RemovedAt is when an admin removed the node (or its pool deleted its machine): out
	// of service for good, hidden from node lists unless asked for, until it joins again.
	RemovedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RuntimeSlurm is the runtime of a node that a Slurm pool's inventory shows: Slurm
// owns it and its health; Gantry never leases to it or judges its heartbeats.
const RuntimeSlurm = "slurm"

// Labels of the Gantry nodes of a Slurm pool: a Slurm node in several partitions is
// a Gantry node in the pool of each, all of one machine, told apart from others by
// the name of its cluster (Slurm's ClusterName) and its own.
const (
	LabelSlurmCluster   = "slurm.cluster"
	LabelSlurmNode      = "slurm.node"
	LabelSlurmPartition = "slurm.partition"
)

// SharedSlurmNodes groups the Gantry nodes that are one Slurm node (in several
// partitions, so several pools): it maps each node of a group of two or more to the
// group's first by id, whose GPUs, CPUs and memory they all share. Nodes of no group
// are left out. Callers pass the nodes that count (those up, say).
func SharedSlurmNodes(nodes []Node) map[int64]int64 {
	first := map[string]int64{}
	size := map[string]int{}
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		k := slurmNodeKey(n)
		if k == "" {
			continue
		}
		keys[i] = k
		size[k]++
		if id, ok := first[k]; !ok || n.ID < id {
			first[k] = n.ID
		}
	}
	out := map[int64]int64{}
	for i, n := range nodes {
		if k := keys[i]; k != "" && size[k] > 1 {
			out[n.ID] = first[k]
		}
	}
	return out
}

// SlurmClusterOf is the cluster a Slurm pool's node was last synced from: "" for
// other nodes, and for those synced before their labels said.
func SlurmClusterOf(n Node) string { return slurmLabels(n)[LabelSlurmCluster] }

// slurmNodeKey is the machine a Slurm pool's node is: "" for other nodes, and for
// those synced before their labels said which cluster they are of.
func slurmNodeKey(n Node) string {
	l := slurmLabels(n)
	if l[LabelSlurmCluster] == "" || l[LabelSlurmNode] == "" {
		return ""
	}
	return l[LabelSlurmCluster] + "\x00" + l[LabelSlurmNode]
}

// slurmLabels are a Slurm pool's node's labels; nil for other nodes.
func slurmLabels(n Node) map[string]string {
	if n.Runtime != RuntimeSlurm || n.Labels == "" {
		return nil
	}
	var l map[string]string
	if err := json.Unmarshal([]byte(n.Labels), &l); err != nil {
		return nil
	}
	return l
}

// GPUDevice is one physical GPU of a node.
type GPUDevice struct {
	ID           int64
	NodeID       int64
	Index        int `gorm:"column:idx"`
	UUID         string
	Model        string
	MemoryMiB    int64 `gorm:"column:memory_mib"`
	MIGEnabled   bool
	NVLinkPeers  string `gorm:"column:nvlink_peers"` // JSON array of peer indexes
	PCIBusID     string
	Healthy      bool
	HealthReason string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// GPUSlice is a MIG instance of a device, schedulable on its own.
type GPUSlice struct {
	ID            int64
	DeviceID      int64
	UUID          string
	Profile       string // as NVML names it, e.g. 3g.40gb
	MemoryMiB     int64  `gorm:"column:memory_mib"`
	ComputeSlices int
	CreatedAt     time.Time
}

// JoinToken lets an agent register a node; only its SHA-256 is stored.
type JoinToken struct {
	ID          int64
	Name        string
	Hash        string `json:"-"`
	PoolID      *int64
	Reusable    bool
	ExpiresAt   time.Time
	UsedAt      *time.Time
	RevokedAt   *time.Time
	CreatedByID *int64
	CreatedAt   time.Time
}

// Image statuses in the catalog.
const (
	ImageCertified   = "certified"
	ImageUncertified = "uncertified"
	ImageDeprecated  = "deprecated"
)

// Image is a catalog entry: a container image with what it was built for.
type Image struct {
	ID               int64
	Name             string
	Reference        string
	Digest           string
	Framework        string
	FrameworkVersion string
	CUDAVersion      string
	MinDriver        string
	PythonVersion    string
	SizeMiB          int64 `gorm:"column:size_mib"`
	Status           string
	PrePull          bool
	Builtin          bool // the plain-command entry for process runtimes
	Description      string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// NodeImage records that a node has an image pulled.
type NodeImage struct {
	ID       int64
	NodeID   int64
	ImageID  int64
	PulledAt time.Time
}
