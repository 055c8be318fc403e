package handlers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// readingsWindow is how old a GPU reading may be and still be shown as now.
const readingsWindow = 2 * time.Minute

// clusterFleet is the whole fleet as the cluster page counts it: every node listed and
// its GPUs with what holds them. Capacity and the pools' figures are the fleet's; the
// nodes drawn are a page of it.
type clusterFleet struct {
	nodes   []models.Node
	pools   map[int64]models.NodePool
	gpus    map[int64][]templates.ClusterGPU // by node id; nodes of one Slurm node share theirs
	up      map[int64]bool                   // ready, draining or cordoned: its GPUs count as capacity
	meshed  map[int64]bool                   // its GPUs (two or more) joined by NVLink each to every other
	shared  map[int64]int64                  // the first Gantry node of each node's Slurm node
	slices  int                              // MIG instances, and those free
	free    int
	foreign []templates.ClusterForeign
	removed int
}

// clusterFleet reads the nodes listed (the removed ones too with withRemoved), their
// GPUs and MIG instances, what holds each, and the jobs Slurm runs outside Gantry.
func (h *Handler) clusterFleet(ctx context.Context, withRemoved bool, pools []models.NodePool) (*clusterFleet, error) {
	nodes, devs, removed, err := h.fleet(ctx, withRemoved)
	if err != nil {
		return nil, err
	}
	f := &clusterFleet{nodes: nodes, removed: removed, pools: map[int64]models.NodePool{}, gpus: map[int64][]templates.ClusterGPU{}, up: map[int64]bool{}}
	for _, p := range pools {
		f.pools[p.ID] = p
	}
	use, err := h.activeGPUUse(ctx)
	if err != nil {
		return nil, err
	}
	listed := make(map[int64]bool, len(nodes))
	for _, n := range nodes {
		listed[n.ID] = true
		f.up[n.ID] = n.State == models.NodeReady || n.State == models.NodeDraining || n.State == models.NodeCordoned
	}
	for _, dv := range devs {
		if !listed[dv.NodeID] {
			continue
		}
		var migs []templates.ClusterSlice
		for _, s := range dv.Slices {
			migs = append(migs, templates.ClusterSlice{Profile: s.Profile, Used: use.mig[s.UUID]})
			f.slices++
			if !use.mig[s.UUID] {
				f.free++
			}
		}
		f.gpus[dv.NodeID] = append(f.gpus[dv.NodeID], templates.ClusterGPU{Index: dv.Index, UUID: dv.UUID, Model: dv.Model,
			Memory: mibText(dv.MemoryMiB), Healthy: dv.Healthy, HealthReason: dv.HealthReason,
			InUseMilli: min(use.device[dv.UUID], 1000), Jobs: use.jobs[dv.UUID], Slices: migs, UtilPct: -1})
	}
	f.meshed = meshedNodes(devs, listed)
	f.shared = shareGPUs(nodes, f.up, f.gpus)
	foreign, err := h.store.SlurmForeignJobs(ctx, 0)
	if err != nil {
		return nil, err
	}
	f.foreign = markForeign(foreign, nodes, pools, f.gpus)
	return f, nil
}

// counted says whether node n's GPUs count as capacity: it is up, and the first of its
// Slurm node's Gantry nodes when it shares one.
func (f *clusterFleet) counted(n models.Node) bool {
	first, ok := f.shared[n.ID]
	return f.up[n.ID] && (!ok || first == n.ID)
}

// capacity writes the fleet's figures into d: GPUs, in use and free, MIG instances,
// nodes ready and not, and whether any GPU is simulated.
func (f *clusterFleet) capacity(d *templates.ClusterData) {
	var total, inUse int64
	for _, n := range f.nodes {
		if f.counted(n) {
			for _, g := range f.gpus[n.ID] {
				total += 1000
				inUse += g.InUseMilli
			}
		}
		d.Simulated = d.Simulated || (n.Simulated && len(f.gpus[n.ID]) > 0)
		switch first, ok := f.shared[n.ID]; {
		case n.RemovedAt != nil: // out of service for good: neither ready nor waiting for attention
		case ok && first != n.ID: // counted as its Slurm node's first Gantry node
		case n.State == models.NodeReady:
			d.NodesReady++
		default:
			d.NodesOther++
		}
	}
	d.GPUs, d.GPUsInUse, d.GPUsFree = gpusOf(total), gpusOf(inUse), gpusOf(total-inUse)
	d.Slices, d.SlicesFree = f.slices, f.free
}

// poolOf is the id of n's pool, 0 for none.
func poolOf(n models.Node) int64 {
	if n.PoolID == nil {
		return 0
	}
	return *n.PoolID
}

// summary is each pool's line (the nodes in none first, then by pool id), its link the
// node list narrowed to it as filter otherwise asks. A node of a Slurm node in several
// pools counts in each: each pool's jobs may use its GPUs.
func (f *clusterFleet) summary(filter nodeFilter) []templates.ClusterPoolSummary {
	byPool := map[int64]*templates.ClusterPoolSummary{}
	modelCount := map[int64]map[string]int{}
	total, inUse := map[int64]int64{}, map[int64]int64{}
	for _, n := range f.nodes {
		if n.RemovedAt != nil {
			continue
		}
		pid := poolOf(n)
		s, ok := byPool[pid]
		if !ok {
			s = &templates.ClusterPoolSummary{Name: "no pool", Filter: noPool}
			if p, ok := f.pools[pid]; ok {
				s.Name, s.Filter, s.Capacity = p.Name, p.Name, p.CapacityType
			}
			byPool[pid], modelCount[pid] = s, map[string]int{}
		}
		if n.State == models.NodeReady {
			s.NodesReady++
		} else {
			s.NodesOther++
		}
		if !f.up[n.ID] {
			continue
		}
		for _, g := range f.gpus[n.ID] {
			modelCount[pid][g.Model]++
			total[pid] += 1000
			inUse[pid] += g.InUseMilli
		}
	}
	for pid, p := range f.pools {
		if _, ok := byPool[pid]; !ok {
			byPool[pid] = &templates.ClusterPoolSummary{Name: p.Name, Filter: p.Name, Capacity: p.CapacityType, Empty: emptyPoolNote(p)}
		}
	}
	out := make([]templates.ClusterPoolSummary, 0, len(byPool))
	for _, pid := range slices.Sorted(maps.Keys(byPool)) {
		s := byPool[pid]
		narrowed := filter
		narrowed.pool = s.Filter
		s.Link = narrowed.link(1, filter.removed)
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(modelCount[pid])) {
			parts = append(parts, strconv.Itoa(modelCount[pid][m])+" × "+m)
		}
		s.Models = strings.Join(parts, ", ")
		s.GPUs, s.InUse, s.Free = gpusOf(total[pid]), gpusOf(inUse[pid]), gpusOf(total[pid]-inUse[pid])
		out = append(out, *s)
	}
	return out
}

// emptyPoolNote says where a pool without nodes gets them: an elastic pool at zero is
// capacity that comes when a job asks for it.
func emptyPoolNote(p models.NodePool) string {
	switch {
	case p.Provider == pools.ProviderExec && p.MaxNodes > 0:
		note := fmt.Sprintf("none now: up to %d on demand", p.MaxNodes)
		if t, err := pools.ParseTemplate(p.Template); err == nil && t.GPUs > 0 {
			note += fmt.Sprintf(", each %d × %s", t.GPUs, t.GPUModel)
		}
		return note
	case p.Provider == pools.ProviderSlurm:
		return "none: Gantry has seen no node in its Slurm partition"
	default:
		return "none yet: an agent joins it with a join token"
	}
}

// byPool is the fleet's nodes as the page lists them: by pool (the nodes in none
// first, then by pool id), by name within a pool.
func (f *clusterFleet) byPool() []models.Node {
	nodes := slices.Clone(f.nodes)
	slices.SortStableFunc(nodes, func(a, b models.Node) int { return cmp.Compare(poolOf(a), poolOf(b)) })
	return nodes
}

// readGPUs reads the latest reading of the GPUs of nodes into the fleet's GPUs and
// returns when the newest was taken ("" without one).
func (h *Handler) readGPUs(ctx context.Context, f *clusterFleet, nodes []models.Node, now time.Time) (string, error) {
	var uuids []string
	for _, n := range nodes {
		for _, g := range f.gpus[n.ID] {
			uuids = append(uuids, g.UUID)
		}
	}
	samples, err := h.store.LatestSamplesOfDevices(ctx, now.Add(-readingsWindow), uuids)
	if err != nil {
		return "", fmt.Errorf("read GPU readings: %w", err)
	}
	latest := make(map[string]models.TelemetrySample, len(samples))
	var newest time.Time
	for _, s := range samples {
		latest[s.DeviceUUID] = s
		if s.At.After(newest) {
			newest = s.At
		}
	}
	for _, n := range nodes {
		gs := f.gpus[n.ID]
		for i := range gs {
			if r, ok := latest[gs[i].UUID]; ok && r.Reported&models.ReportedUtil != 0 {
				gs[i].UtilPct, gs[i].Reading = readingOf(r)
			}
		}
	}
	if newest.IsZero() {
		return "", nil
	}
	return newest.Format(pageTime), nil
}

// readingOf says a GPU's reading: its utilisation in percent, and in words with the
// memory used and temperature where reported ("37% busy, 12 GiB used, 61 °C").
func readingOf(r models.TelemetrySample) (int, string) {
	util := int(r.UtilPct + 0.5)
	parts := []string{strconv.Itoa(util) + "% busy"}
	if r.Reported&models.ReportedMemory != 0 {
		parts = append(parts, mibText(r.MemUsedMiB)+" used")
	}
	if r.Reported&models.ReportedTemperature != 0 {
		parts = append(parts, strconv.Itoa(int(r.TempC+0.5))+" °C")
	}
	return util, strings.Join(parts, ", ")
}

// sections are nodes (a page, in byPool's order) grouped by pool, each with its GPUs.
func (f *clusterFleet) sections(nodes []models.Node, now time.Time) []templates.ClusterPool {
	var out []templates.ClusterPool
	for i, n := range nodes {
		pid := poolOf(n)
		if i == 0 || poolOf(nodes[i-1]) != pid {
			p := templates.ClusterPool{Name: "Nodes in no pool"}
			if pl, ok := f.pools[pid]; ok {
				p.Name, p.Capacity = "Pool "+pl.Name, pl.CapacityType
			}
			out = append(out, p)
		}
		cn := templates.ClusterNode{Name: n.Name, State: n.State, Reason: n.StateReason, Runtime: n.Runtime, Driver: n.DriverVersion,
			Simulated: n.Simulated, CPU: decimal(float64(n.CPUMilli) / 1000), RAM: mibText(n.MemoryMiB) + " RAM", GPUs: f.gpus[n.ID],
			SameAs: sameSlurmNode(n.ID, f.nodes, f.shared), Removed: removedDate(n), NVLink: f.meshed[n.ID]}
		if n.LastHeartbeatAt != nil {
			cn.Heartbeat = ago(now, *n.LastHeartbeatAt)
		}
		last := &out[len(out)-1]
		last.Nodes = append(last.Nodes, cn)
	}
	return out
}

// meshedNodes says which listed nodes have two or more GPUs, each joined by NVLink to
// every other: where a job that requires NVLink can take all of them. A GPU's peers are
// a JSON list of the node's other GPUs' indexes (the agent checks them), so counting
// them is enough.
func meshedNodes(devs []store.FleetGPU, listed map[int64]bool) map[int64]bool {
	gpus, linked := map[int64]int{}, map[int64]int{}
	for _, dv := range devs {
		if !listed[dv.NodeID] {
			continue
		}
		gpus[dv.NodeID]++
		if peers := strings.Trim(dv.NVLinkPeers, "[]"); peers != "" {
			linked[dv.NodeID] += strings.Count(peers, ",") + 1
		}
	}
	out := map[int64]bool{}
	for id, n := range gpus {
		out[id] = n > 1 && linked[id] == n*(n-1)
	}
	return out
}
