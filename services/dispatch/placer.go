package dispatch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/scheduler"
)

// Placer is the Scheduler that production runs: it hands services/scheduler the
// snapshot (nodes, what runs, the queue) for one full cycle (class order, ageing,
// fair share, gangs, backfill, preemption) and turns its plan into dispatch's. The
// priority classes are the snapshot's, so an admin's change holds from the next pass.
type Placer struct {
	base scheduler.Config
	mu   sync.Mutex
	// sched is the scheduler for the classes of the last snapshot, keyed by them.
	sched   *scheduler.Scheduler
	classes string
}

// NewPlacer returns a Placer over s; snapshots' priority classes replace its own.
func NewPlacer(s *scheduler.Scheduler) *Placer { return &Placer{base: s.Config(), sched: s} }

// scheduler returns the scheduler for the snapshot's priority classes.
func (p *Placer) scheduler(classes []models.PriorityClass) (*scheduler.Scheduler, error) {
	if len(classes) == 0 {
		return p.sched, nil
	}
	sc := SchedulerClasses(classes)
	key := fmt.Sprint(sc)
	p.mu.Lock()
	defer p.mu.Unlock()
	if key == p.classes {
		return p.sched, nil
	}
	cfg := p.base
	cfg.Classes = sc
	if !slices.ContainsFunc(sc, func(c scheduler.PriorityClass) bool { return c.Name == cfg.DefaultClass }) {
		// Jobs always name their class; the default only has to be one of them.
		cfg.DefaultClass = sc[len(sc)-1].Name
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, err
	}
	p.sched, p.classes = s, key
	return s, nil
}

// SchedulerClasses are the database's priority classes as the scheduler reads them.
func SchedulerClasses(classes []models.PriorityClass) []scheduler.PriorityClass {
	out := make([]scheduler.PriorityClass, len(classes))
	for i, c := range classes {
		out[i] = scheduler.PriorityClass{Name: c.Name, Weight: float64(c.Weight), CanPreempt: c.CanPreempt}
	}
	return out
}

// Plan places what fits, preempts what the scheduler chose, and says why the rest waits.
func (p *Placer) Plan(snap Snapshot) Plan {
	plan := Plan{Waiting: map[int64]string{}}
	sched, err := p.scheduler(snap.Classes)
	var sp scheduler.Plan
	if err == nil {
		sp, err = sched.Schedule(SchedulerSnapshot(snap))
	}
	if err != nil {
		for _, j := range snap.Queue {
			plan.Waiting[j.ID] = "the scheduler cannot read the cluster's state: " + err.Error()
		}
		return plan
	}
	// The scheduler places a job on the capacity of the jobs it preempts for it, but
	// they hold it until they stop: such a job waits for them, and a later pass places it.
	victims := map[string][]string{}
	for _, pr := range sp.Preemptions {
		if id, err := strconv.ParseInt(pr.JobID, 10, 64); err == nil {
			// For is a job of this snapshot's queue, whose ids all came from int64s.
			forID, _ := strconv.ParseInt(pr.For, 10, 64)
			plan.Preemptions = append(plan.Preemptions, Preemption{JobID: id, For: forID, Reason: fmt.Sprintf("preempted for job %s: %s", pr.For, pr.Reason)})
			victims[pr.For] = append(victims[pr.For], pr.JobID)
		}
	}
	for _, pl := range sp.Placements {
		id, err := strconv.ParseInt(pl.JobID, 10, 64)
		if err != nil {
			continue
		}
		if vs := victims[pl.JobID]; len(vs) > 0 {
			plan.Waiting[id] = waitingForVictims(vs)
			continue
		}
		plan.Placements = append(plan.Placements, placementOf(id, pl))
	}
	for _, u := range sp.Unplaced {
		if id, err := strconv.ParseInt(u.JobID, 10, 64); err == nil {
			plan.Waiting[id] = u.Explanation.Reason
		}
	}
	return plan
}

// waitingForVictims says why a job the scheduler preempted for has not started yet.
func waitingForVictims(ids []string) string {
	if len(ids) == 1 {
		return fmt.Sprintf("waits for job %s to stop: it was preempted for this job and checkpoints first", ids[0])
	}
	return fmt.Sprintf("waits for jobs %s to stop: they were preempted for this job and checkpoint first", strings.Join(ids, ", "))
}

// SchedulerSnapshot is the snapshot as services/scheduler reads it: node, job and GPU
// ids as decimal strings; the autoscaler asks the scheduler with the same.
func SchedulerSnapshot(snap Snapshot) scheduler.Snapshot {
	ss := scheduler.Snapshot{Now: snap.Now}
	gpuIndex := map[string]int{}
	for _, n := range snap.Nodes {
		ss.Nodes = append(ss.Nodes, schedNode(n))
		for _, g := range n.GPUs {
			gpuIndex[g.UUID] = g.Index
		}
	}
	for _, r := range snap.Running {
		if r.Job == nil {
			continue
		}
		ss.Running = append(ss.Running, scheduler.Allocation{
			Job:       schedJob(r.Job, &snap),
			Replica:   schedReplica(r, gpuIndex),
			StartTime: startOf(r.Allocation),
		})
	}
	for i := range snap.Queue {
		ss.Pending = append(ss.Pending, schedJob(&snap.Queue[i], &snap))
	}
	for _, q := range snap.Quotas {
		ss.Quotas = append(ss.Quotas, scheduler.Quota{Team: q.Team, Model: q.GPUModel, Cohort: q.Cohort, Nominal: q.NominalMilli,
			BorrowingLimit: limitOf(q.BorrowingLimitMilli), LendingLimit: limitOf(q.LendingLimitMilli),
			CPU: scheduler.ResourceQuota{Nominal: q.CPUMilli, BorrowingLimit: limitOf(q.CPUBorrowingLimitMilli), LendingLimit: limitOf(q.CPULendingLimitMilli)},
			RAM: scheduler.ResourceQuota{Nominal: q.MemoryMiB, BorrowingLimit: limitOf(q.MemoryBorrowingLimitMiB), LendingLimit: limitOf(q.MemoryLendingLimitMiB)}})
	}
	for _, u := range snap.Usage {
		ss.Usage = append(ss.Usage, scheduler.UsageRecord{Team: u.Team, Start: u.Start, End: u.End, GPUMilli: u.GPUMilli, CPUMilli: u.CPUMilli, RAMMiB: u.MemoryMiB})
	}
	return ss
}

func schedNode(n NodeCapacity) scheduler.Node {
	out := scheduler.Node{ID: strconv.FormatInt(n.ID, 10), Pool: n.Pool, Region: n.Region, Confidential: n.Confidential, WholeGPUs: n.WholeGPUs, Labels: n.Labels, Spot: n.Spot,
		Runs: n.Runs, PriceMicros: n.PriceMicros, CPUMilli: n.CPUMilli, RAMMiB: n.MemoryMiB, ScratchMiB: n.ScratchMiB}
	for _, g := range n.GPUs {
		sg := scheduler.GPU{Index: g.Index, UUID: g.UUID, Model: g.Model, MemoryMiB: g.MemoryMiB, NVLinkPeers: g.NVLinkPeers}
		for _, m := range g.MIG {
			sg.MIG = append(sg.MIG, scheduler.MIGSlice{ID: m.UUID, Profile: m.Profile, MemoryMiB: m.MemoryMiB})
		}
		out.GPUs = append(out.GPUs, sg)
	}
	return out
}

// schedJob is a job as services/scheduler reads it, with its project's team and
// placement policy from the snapshot.
func schedJob(j *models.Job, snap *Snapshot) scheduler.Job {
	policy := snap.Policies[j.ProjectID]
	var gpuModels []string
	for _, m := range strings.Split(j.GPUModel, "|") {
		if m = strings.TrimSpace(m); m != "" {
			gpuModels = append(gpuModels, m)
		}
	}
	return scheduler.Job{
		ID:         strconv.FormatInt(j.ID, 10),
		Team:       snap.Teams[j.ProjectID],
		SubmitTime: j.SubmittedAt,
		Request: scheduler.Request{
			GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUMemoryMiB: j.GPUMemoryMiB, GPUModels: gpuModels, MIGProfile: j.MIGProfile, NVLink: j.NVLink,
			CPUMilli: j.CPUMilli, RAMMiB: j.MemoryMiB, ScratchMiB: j.ScratchMiB, Container: j.ImageRef != "", Replicas: max(j.Replicas, 1),
			Class: j.PriorityClass, Preemptible: j.Preemptible, SpotAllowed: j.Spot, Kind: scheduler.Kind(j.Kind),
			ExpectedRuntime: time.Duration(j.ExpectedRunSec) * time.Second,
			Policy:          scheduler.Policy{Pools: policy.Pools, Regions: policy.Regions, ConfidentialOnly: policy.ConfidentialOnly},
		},
	}
}

// schedReplica is a running allocation as the scheduler counts it.
func schedReplica(r RunningAllocation, gpuIndex map[string]int) scheduler.ReplicaPlacement {
	a := r.Allocation
	rp := scheduler.ReplicaPlacement{Replica: a.Replica, NodeID: strconv.FormatInt(a.NodeID, 10), CPUMilli: a.CPUMilli, RAMMiB: a.MemoryMiB, ScratchMiB: a.ScratchMiB}
	for _, d := range r.Devices {
		rp.Devices = append(rp.Devices, scheduler.DeviceAssignment{
			GPUIndex: gpuIndex[d.UUID], UUID: d.UUID, Milli: int(d.Milli), MemoryMiB: d.MemoryMiB,
			MIGSlice: d.MIGUUID, MIGProfile: d.MIGProfile,
		})
	}
	return rp
}

func startOf(a models.Allocation) time.Time {
	if a.StartedAt != nil {
		return *a.StartedAt
	}
	return a.CreatedAt
}

func placementOf(jobID int64, pl scheduler.Placement) Placement {
	out := Placement{JobID: jobID}
	for _, rp := range pl.Replicas {
		node, _ := strconv.ParseInt(rp.NodeID, 10, 64)
		r := ReplicaPlacement{NodeID: node, GPUs: []agentapi.Device{}}
		for _, d := range rp.Devices {
			r.GPUs = append(r.GPUs, agentapi.Device{UUID: d.UUID, Milli: int64(d.Milli), MemoryMiB: d.MemoryMiB, MIGUUID: d.MIGSlice, MIGProfile: d.MIGProfile})
		}
		out.Replicas = append(out.Replicas, r)
	}
	return out
}

// limitOf is a quota limit as the scheduler counts it: negative for unlimited.
func limitOf(milli *int64) int64 {
	if milli == nil {
		return -1
	}
	return *milli
}
