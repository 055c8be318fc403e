package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// Scheduler decides where queued jobs run. It must be pure: it reads only the
// snapshot, so that the plan can be checked and replayed.
type Scheduler interface {
	Plan(Snapshot) Plan
}

// Snapshot is the cluster as the scheduler sees it: the queue, every node that
// takes new work with what it offers and what is free, and what runs there.
type Snapshot struct {
	Now   time.Time
	Queue []models.Job // queued jobs, oldest first
	Nodes []NodeCapacity
	// Running are the active allocations on those nodes, with their jobs.
	Running []RunningAllocation
	// Teams names the team of each project of the queue and of what runs.
	Teams map[int64]string
	// Quotas are the teams' quotas; a team without any is not limited.
	Quotas []Quota
	// Usage is the teams' past use, for fair share: what ended in the last four weeks.
	Usage []Usage
	// Classes are the priority classes in force, highest weight first.
	Classes []models.PriorityClass
	// Policies are the placement policies of the projects that have one, by project id.
	Policies map[int64]Policy
	// Shared maps the Gantry nodes that are one Slurm node (in the partitions of
	// several pools) to the first of them: they share its capacity.
	Shared map[int64]int64
}

// Policy is a project's placement policy: the pools and regions its jobs may use, and
// whether only confidential-computing nodes will do. Empty lists allow any.
type Policy struct {
	Pools            []string
	Regions          []string
	ConfidentialOnly bool
}

// Quota is a team's quota for one GPU model ("" for any).
type Quota struct {
	Team     string
	GPUModel string
	models.QuotaLimits
}

// Usage is what a team used over [Start, End): per second on average.
type Usage struct {
	Team       string
	Start, End time.Time
	GPUMilli   int64
	CPUMilli   int64
	MemoryMiB  int64
}

// NodeCapacity is a ready node: what it offers and what is free of it.
type NodeCapacity struct {
	ID   int64
	Name string
	// Pool names the node's pool; Spot is set for spot pools and pools that take
	// only jobs allowing spot; PriceMicros is an hour of the node at the rate card.
	Pool   string
	Region string
	Spot   bool
	// Confidential: the node's GPUs run in confidential-computing mode.
	Confidential bool
	// Runs is what the node's runtime starts: plain commands, container images or both.
	Runs scheduler.Runs
	// WholeGPUs: the node gives GPUs only whole (a Slurm node), never a share or a slice.
	WholeGPUs                       bool
	PriceMicros                     int64
	Labels                          map[string]string
	CPUMilli, MemoryMiB, ScratchMiB int64
	FreeCPUMilli                    int64
	FreeMemoryMiB                   int64
	FreeScratchMiB                  int64
	GPUs                            []GPUCapacity
}

// GPUCapacity is one GPU of a node and the share of it that is free.
type GPUCapacity struct {
	UUID        string
	Index       int
	Model       string
	MemoryMiB   int64
	FreeMilli   int64 // 1000 when no allocation uses it
	Healthy     bool
	NVLinkPeers []int // indexes of the GPUs it has NVLink to
	MIG         []MIGCapacity
}

// MIGCapacity is one MIG instance of a GPU.
type MIGCapacity struct {
	UUID      string
	Profile   string
	MemoryMiB int64
	Free      bool
}

// RunningAllocation is an active allocation and its job, as store.AllocatedJob reads it
// (what it asks for and where it may run; no command or environment).
type RunningAllocation struct {
	Allocation models.Allocation
	Devices    []agentapi.Device
	Job        *models.Job
}

// Plan is the scheduler's answer.
type Plan struct {
	Placements []Placement
	// Preemptions stop running jobs to make room; they resume from their checkpoints.
	Preemptions []Preemption
	// Waiting says, for jobs left in the queue, why they wait, in words.
	Waiting map[int64]string
}

// Placement puts every replica of a job on a node.
type Placement struct {
	JobID    int64
	Replicas []ReplicaPlacement
}

// ReplicaPlacement is one replica's node and GPU shares.
type ReplicaPlacement struct {
	NodeID int64
	GPUs   []agentapi.Device
}

// queueLimit bounds how much of the queue one pass considers.
const queueLimit = 1000

// snapshot reads the queue and the ready nodes with what runs on them.
func (s *Service) snapshot(ctx context.Context) (Snapshot, error) {
	snap := Snapshot{Now: s.now().UTC(), Teams: map[int64]string{}}
	var err error
	if snap.Queue, err = s.store.QueuedJobs(ctx, queueLimit); err != nil || len(snap.Queue) == 0 {
		return snap, err
	}
	return snap, s.addCluster(ctx, &snap)
}

// addCluster fills in the ready nodes, what runs on them, the teams of projects, their
// quotas and usage history, and the priority classes.
func (s *Service) addCluster(ctx context.Context, snap *Snapshot) error {
	nodes, err := s.store.NodesInStates(ctx, []string{models.NodeReady})
	if err != nil {
		return err
	}
	byID, err := s.addNodes(ctx, snap, nodes)
	if err != nil {
		return err
	}
	if err := s.addRunning(ctx, snap, byID); err != nil {
		return err
	}
	shareSlurmNodes(snap, nodes)
	if err := s.addForeign(ctx, snap); err != nil {
		return err
	}
	teams, err := s.addTeams(ctx, snap)
	if err != nil {
		return err
	}
	if err := s.addQuotas(ctx, snap, teams); err != nil {
		return err
	}
	if snap.Usage, err = s.usage.history(ctx, s.store, snap.Now, teams); err != nil {
		return err
	}
	snap.Classes, err = s.store.PriorityClasses(ctx)
	return err
}

// addNodes adds nodes with their devices, pools and prices, all capacity free, and
// returns their indexes in snap.Nodes by id.
func (s *Service) addNodes(ctx context.Context, snap *Snapshot, nodes []models.Node) (map[int64]int, error) {
	byID := make(map[int64]int, len(nodes))
	for i, n := range nodes {
		byID[n.ID] = i
		nc := NodeCapacity{ID: n.ID, Name: n.Name, CPUMilli: n.CPUMilli, MemoryMiB: n.MemoryMiB, ScratchMiB: n.ScratchMiB,
			FreeCPUMilli: n.CPUMilli, FreeMemoryMiB: n.MemoryMiB, FreeScratchMiB: n.ScratchMiB, Confidential: n.Confidential,
			Runs: runsOf(n.Runtime), WholeGPUs: n.Runtime == models.RuntimeSlurm}
		if n.Labels != "" {
			if err := json.Unmarshal([]byte(n.Labels), &nc.Labels); err != nil {
				return nil, fmt.Errorf("labels of node %s: %w", n.Name, err)
			}
		}
		snap.Nodes = append(snap.Nodes, nc)
	}
	if err := s.addDevices(ctx, snap, byID); err != nil {
		return nil, err
	}
	return byID, s.addPools(ctx, snap, nodes)
}

// runsOf is what a node of the runtime starts. A Slurm node starts container images
// only where its pool names a container plugin (addPools).
func runsOf(runtime string) scheduler.Runs {
	switch runtime {
	case agentapi.RuntimeProcess, models.RuntimeSlurm:
		return scheduler.RunsPlain
	case agentapi.RuntimeDocker, agentapi.RuntimePodman:
		return scheduler.RunsContainers
	}
	return scheduler.RunsBoth
}

// addDevices fills in the GPUs and MIG instances of the snapshot's nodes, from the
// fleet's as the inventory cache has them.
func (s *Service) addDevices(ctx context.Context, snap *Snapshot, byID map[int64]int) error {
	gpus, peers, err := s.inventory.fleet(ctx, s.store)
	if err != nil {
		return err
	}
	for i := range gpus {
		d := &gpus[i]
		at, ok := byID[d.NodeID]
		if !ok {
			continue
		}
		var migs []MIGCapacity
		for _, sl := range d.Slices {
			migs = append(migs, MIGCapacity{UUID: sl.UUID, Profile: sl.Profile, MemoryMiB: sl.MemoryMiB, Free: true})
		}
		n := &snap.Nodes[at]
		n.GPUs = append(n.GPUs, GPUCapacity{UUID: d.UUID, Index: d.Index, Model: d.Model, MemoryMiB: d.MemoryMiB, FreeMilli: 1000,
			Healthy: d.Healthy, NVLinkPeers: peers[i], MIG: migs})
	}
	return nil
}

// addPools names each node's pool, marks spot nodes, lets the Slurm nodes of pools with
// a container plugin start images, and prices each node at the rate card, as metering
// will charge it.
func (s *Service) addPools(ctx context.Context, snap *Snapshot, nodes []models.Node) error {
	pools, err := s.store.NodePools(ctx)
	if err != nil || len(pools) == 0 {
		return err
	}
	rates, err := s.store.CostRates(ctx)
	if err != nil {
		return err
	}
	prices := accounting.NewPrices(rates)
	byID := make(map[int64]models.NodePool, len(pools))
	for _, p := range pools {
		byID[p.ID] = p
	}
	for i, n := range nodes {
		if n.PoolID == nil {
			continue
		}
		p, ok := byID[*n.PoolID]
		if !ok {
			continue
		}
		nc := &snap.Nodes[i]
		nc.Pool, nc.Region, nc.Spot = p.Name, p.Region, p.CapacityType == models.CapacitySpot || p.SpotOnly
		if n.Runtime == models.RuntimeSlurm && p.Provider == "slurm" {
			// A configuration that does not parse submits nothing; plain is as good as any.
			if cfg, err := slurm.ParseConfig(p.ProviderConfig); err == nil && cfg.Container != "" {
				nc.Runs = scheduler.RunsBoth
			}
		}
		m := accounting.Machine{PoolID: p.ID, Capacity: p.CapacityType, GPUs: len(nc.GPUs), CPUMilli: nc.CPUMilli, MemoryMiB: nc.MemoryMiB}
		if len(nc.GPUs) > 0 {
			m.GPUModel = nc.GPUs[0].Model
		}
		nc.PriceMicros = prices.NodeHour(snap.Now, m)
	}
	return nil
}

// addRunning charges the active allocations to their nodes' free capacity.
func (s *Service) addRunning(ctx context.Context, snap *Snapshot, byID map[int64]int) error {
	running, err := s.store.ActiveAllocationsWithJobs(ctx)
	if err != nil {
		return err
	}
	for _, r := range running {
		a := r.Allocation
		i, ok := byID[a.NodeID]
		if !ok {
			continue
		}
		shares, err := devicesOf(a)
		if err != nil {
			return err
		}
		n := &snap.Nodes[i]
		n.FreeCPUMilli -= a.CPUMilli
		n.FreeMemoryMiB -= a.MemoryMiB
		n.FreeScratchMiB -= a.ScratchMiB
		for _, sh := range shares {
			for g := range n.GPUs {
				if n.GPUs[g].UUID != sh.UUID {
					continue
				}
				if sh.MIGUUID == "" {
					n.GPUs[g].FreeMilli -= sh.Milli
				}
				for m := range n.GPUs[g].MIG {
					if n.GPUs[g].MIG[m].UUID == sh.MIGUUID {
						n.GPUs[g].MIG[m].Free = false
					}
				}
			}
		}
		snap.Running = append(snap.Running, RunningAllocation{Allocation: a, Devices: shares, Job: &r.Job})
	}
	return nil
}

// addTeams names the team of every project the snapshot's jobs belong to, and returns
// the teams' names by id.
func (s *Service) addTeams(ctx context.Context, snap *Snapshot) (map[int64]string, error) {
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	teams, err := s.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(teams))
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	for _, p := range projects {
		snap.Teams[p.ID] = names[p.TeamID]
		pools, regions, err := p.PlacementLists()
		if err != nil {
			return nil, err
		}
		if len(pools) > 0 || len(regions) > 0 || p.ConfidentialOnly {
			if snap.Policies == nil {
				snap.Policies = map[int64]Policy{}
			}
			snap.Policies[p.ID] = Policy{Pools: pools, Regions: regions, ConfidentialOnly: p.ConfidentialOnly}
		}
	}
	return names, nil
}

// addQuotas reads the teams' quotas into the snapshot.
func (s *Service) addQuotas(ctx context.Context, snap *Snapshot, teams map[int64]string) error {
	quotas, err := s.store.Quotas(ctx)
	if err != nil {
		return err
	}
	for _, q := range quotas {
		snap.Quotas = append(snap.Quotas, Quota{Team: teams[q.TeamID], GPUModel: q.GPUModel, QuotaLimits: q.QuotaLimits})
	}
	return nil
}

func devicesOf(a models.Allocation) ([]agentapi.Device, error) {
	out, err := agentapi.ParseDevices(a.Devices)
	if err != nil {
		return nil, fmt.Errorf("devices of allocation %d: %w", a.ID, err)
	}
	return out, nil
}

// schedule runs one scheduling pass: snapshot, plan, apply in one transaction.
// It returns how many jobs it placed.
func (s *Service) schedule(ctx context.Context) (int, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if len(snap.Queue) == 0 {
		return 0, nil
	}
	plan := s.sched.Plan(snap)
	placed, touched, err := s.apply(ctx, snap, plan)
	if err != nil {
		return 0, fmt.Errorf("apply plan: %w", err)
	}
	s.nodes.notify(touched...)
	return placed, nil
}

// apply writes the plan in one transaction: for every placement a new attempt with
// its allocations, and for waiting jobs their reason. A placement that does not fit
// what the snapshot says is free is refused and logged, never applied.
func (s *Service) apply(ctx context.Context, snap Snapshot, plan Plan) (int, []int64, error) {
	free := newLedger(snap)
	queued := make(map[int64]*models.Job, len(snap.Queue))
	for i := range snap.Queue {
		queued[snap.Queue[i].ID] = &snap.Queue[i]
	}
	names := make(map[int64]string, len(snap.Nodes))
	for _, n := range snap.Nodes {
		names[n.ID] = n.Name
	}
	placed := 0
	var touched []int64
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		for _, p := range plan.Placements {
			job, ok := queued[p.JobID]
			if !ok {
				s.log.Error("scheduler placed a job that is not queued", "job", p.JobID)
				continue
			}
			if err := free.take(job, p); errors.Is(err, errSharedTaken) {
				s.log.Info("placement waits for the next pass", "job", p.JobID, "err", err)
				continue
			} else if err != nil {
				s.log.Error("scheduler placement refused", "job", p.JobID, "err", err)
				continue
			}
			delete(queued, p.JobID)
			nodes, err := s.place(ctx, tx, job, p, names)
			if err != nil {
				return err
			}
			touched = append(touched, nodes...)
			placed++
		}
		stopped, err := s.preempt(ctx, tx, plan.Preemptions)
		if err != nil {
			return err
		}
		touched = append(touched, stopped...)
		for id, reason := range plan.Waiting {
			if j, ok := queued[id]; ok && j.PendingReason != reason {
				if err := tx.SetPendingReason(ctx, id, reason); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return placed, touched, nil
}

// place starts the job's next attempt with an allocation per replica.
func (s *Service) place(ctx context.Context, tx *store.Store, job *models.Job, p Placement, names map[int64]string) ([]int64, error) {
	attempt := job.Attempt + 1
	allocs := make([]models.Allocation, len(p.Replicas))
	var where []string
	var nodes []int64
	for i, r := range p.Replicas {
		devs, err := json.Marshal(r.GPUs)
		if err != nil {
			return nil, err
		}
		var milli int64
		for _, g := range r.GPUs {
			milli += g.Milli
		}
		allocs[i] = models.Allocation{
			JobID: job.ID, Attempt: attempt, Replica: i, NodeID: r.NodeID, Devices: string(devs), GPUMilli: milli,
			CPUMilli: job.CPUMilli, MemoryMiB: job.MemoryMiB, ScratchMiB: job.ScratchMiB, State: models.AllocPending,
		}
		where = append(where, describePlacement(names[r.NodeID], r.GPUs))
		nodes = append(nodes, r.NodeID)
	}
	err := tx.TransitionJob(ctx, job.ID, store.Transition{
		From: models.JobQueued, To: models.JobScheduled, Reason: "scheduled", Attempt: attempt, Actor: "scheduler",
		Message: fmt.Sprintf("attempt %d placed on %s", attempt, strings.Join(where, "; ")),
	})
	if err != nil {
		return nil, err
	}
	if err := tx.CreateAllocations(ctx, allocs); err != nil {
		return nil, err
	}
	err = s.audit.In(tx).Append(audit.WithActor(ctx, audit.System()), audit.Entry{Action: "job.scheduled", ObjectType: "job",
		ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID, Detail: map[string]any{"attempt": attempt, "placement": where}})
	return nodes, err
}

func describePlacement(node string, gpus []agentapi.Device) string {
	if len(gpus) == 0 {
		return "node " + node + " (no GPU)"
	}
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = g.UUID
		if g.Milli < 1000 {
			// A share as the submit form asks for it, not in milli-GPU.
			parts[i] = g.UUID + " (" + strconv.FormatFloat(float64(g.Milli)/1000, 'f', -1, 64) + " of it)"
		}
	}
	return "node " + node + " GPUs " + strings.Join(parts, ", ")
}

// Snapshot is what the next scheduling pass would see: the queue and, when it is not
// empty, the ready nodes with what runs there. The autoscaler reads it.
func (s *Service) Snapshot(ctx context.Context) (Snapshot, error) { return s.snapshot(ctx) }
