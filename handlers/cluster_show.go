package handlers

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// readingsWindow is how old a GPU reading may be and still be shown as now.
const readingsWindow = 2 * time.Minute

// ClusterShow is the cluster page for anyone signed in: nodes by pool with their GPUs
// (model, health, what holds them, the latest utilisation), capacity in use and free,
// the queue by priority class and team, and each team's quota use. htmx refreshes the
// node part every few seconds: asked so, the handler reads and answers that part alone.
// Removed nodes are left out unless ?removed=1, and never count as capacity or as nodes.
func (h *Handler) ClusterShow(c *gin.Context) {
	ctx := c.Request.Context()
	now := time.Now().UTC()
	show, ok := h.removedOnPage(c)
	if !ok {
		return
	}
	nodes, devs, removed, err := h.fleet(ctx, show)
	if err != nil {
		h.serverError(c, err)
		return
	}
	devIDs := make([]int64, len(devs))
	for i, d := range devs {
		devIDs[i] = d.ID
	}
	migs, err := h.store.SlicesOfDevices(ctx, devIDs)
	if err != nil {
		h.serverError(c, err)
		return
	}
	use, err := h.activeGPUUse(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	readings, err := h.store.LatestGPUReadings(ctx, now.Add(-readingsWindow))
	if err != nil {
		h.serverError(c, err)
		return
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d := templates.ClusterData{Removed: removed, ShowRemoved: show}
	latest := map[string]models.TelemetrySample{}
	var newest time.Time
	for _, r := range readings {
		latest[r.DeviceUUID] = r.TelemetrySample
		if r.At.After(newest) {
			newest = r.At
		}
	}
	if !newest.IsZero() {
		d.ReadingsAt = newest.Format(pageTime)
	}
	slicesOf := map[int64][]templates.ClusterSlice{}
	for _, s := range migs {
		slicesOf[s.DeviceID] = append(slicesOf[s.DeviceID], templates.ClusterSlice{Profile: s.Profile, Used: use.mig[s.UUID]})
		d.Slices++
		if !use.mig[s.UUID] {
			d.SlicesFree++
		}
	}
	gpusOfNode := map[int64][]templates.ClusterGPU{}
	var total, inUse int64
	up := map[int64]bool{}
	for _, n := range nodes {
		up[n.ID] = n.State == models.NodeReady || n.State == models.NodeDraining || n.State == models.NodeCordoned
	}
	for _, dv := range devs {
		g := templates.ClusterGPU{Index: dv.Index, Model: dv.Model, Memory: mibText(dv.MemoryMiB), Healthy: dv.Healthy, HealthReason: dv.HealthReason,
			InUseMilli: min(use.device[dv.UUID], 1000), Jobs: use.jobs[dv.UUID], Slices: slicesOf[dv.ID], UtilPct: -1}
		if r, ok := latest[dv.UUID]; ok && r.Reported&models.ReportedUtil != 0 {
			g.UtilPct = int(r.UtilPct + 0.5)
			parts := []string{strconv.Itoa(g.UtilPct) + "% busy"}
			if r.Reported&models.ReportedMemory != 0 {
				parts = append(parts, mibText(r.MemUsedMiB)+" used")
			}
			if r.Reported&models.ReportedTemperature != 0 {
				parts = append(parts, strconv.Itoa(int(r.TempC+0.5))+" °C")
			}
			g.Reading = strings.Join(parts, ", ")
		}
		gpusOfNode[dv.NodeID] = append(gpusOfNode[dv.NodeID], g)
	}
	shared := shareGPUs(nodes, up, gpusOfNode)
	foreign, err := h.store.SlurmForeignJobs(ctx, 0)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Foreign = markForeign(foreign, nodes, pools, gpusOfNode)
	for id, gs := range gpusOfNode {
		if first, ok := shared[id]; ok && first != id {
			continue // counted on the first Gantry node of its Slurm node
		}
		for _, g := range gs {
			if up[id] {
				total += 1000
				inUse += g.InUseMilli
			}
		}
	}
	d.GPUs, d.GPUsInUse, d.GPUsFree = gpusOf(total), gpusOf(inUse), gpusOf(total-inUse)
	byPool := map[int64]*templates.ClusterPool{}
	var order []int64
	for _, n := range nodes {
		var pid int64
		if n.PoolID != nil {
			pid = *n.PoolID
		}
		if _, ok := byPool[pid]; !ok {
			p := &templates.ClusterPool{Name: "Nodes in no pool"}
			for _, pl := range pools {
				if pl.ID == pid {
					p.Name, p.Capacity = "Pool "+pl.Name, pl.CapacityType
				}
			}
			byPool[pid] = p
			order = append(order, pid)
		}
		cn := templates.ClusterNode{Name: n.Name, State: n.State, Reason: n.StateReason, Runtime: n.Runtime, Driver: n.DriverVersion,
			Simulated: n.Simulated, CPU: decimal(float64(n.CPUMilli) / 1000), RAM: mibText(n.MemoryMiB) + " RAM", GPUs: gpusOfNode[n.ID],
			SameAs: sameSlurmNode(n.ID, nodes, shared), Removed: removedDate(n)}
		if n.LastHeartbeatAt != nil {
			cn.Heartbeat = ago(now, *n.LastHeartbeatAt)
		}
		d.Simulated = d.Simulated || (n.Simulated && len(cn.GPUs) > 0)
		switch first, ok := shared[n.ID]; {
		case n.RemovedAt != nil: // out of service for good: neither ready nor waiting for attention
		case ok && first != n.ID: // counted as its Slurm node's first Gantry node
		case n.State == models.NodeReady:
			d.NodesReady++
		default:
			d.NodesOther++
		}
		byPool[pid].Nodes = append(byPool[pid].Nodes, cn)
	}
	slices.Sort(order)
	for _, pid := range order {
		d.Pools = append(d.Pools, *byPool[pid])
	}
	// The live part and the page share a URL: caches must keep them apart.
	c.Header("Vary", "HX-Request")
	if c.GetHeader("HX-Request") == "true" && c.GetHeader("HX-History-Restore-Request") != "true" {
		render(c, http.StatusOK, templates.ClusterLive(d))
		return
	}
	queue, err := h.store.QueueLengths(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, q := range queue {
		d.Queue = append(d.Queue, templates.ClusterQueue{Class: q.Class, Team: q.Team, Jobs: q.Jobs})
	}
	rows, free, err := h.quotas.Overview(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, q := range rows {
		cq := templates.ClusterQuota{Team: q.Team, Model: modelLabel(q.GPUModel), Nominal: gpusOf(q.NominalMilli), InUse: gpusOf(q.UseMilli)}
		if q.BorrowedMilli > 0 {
			cq.Borrowed = gpusOf(q.BorrowedMilli)
		}
		if q.NominalMilli > 0 {
			cq.Percent = int(min(100, q.UseMilli*100/q.NominalMilli))
		}
		d.Quotas = append(d.Quotas, cq)
	}
	for _, u := range free {
		d.Quotas = append(d.Quotas, templates.ClusterQuota{Team: u.Team, Model: modelLabel(u.GPUModel), InUse: gpusOf(u.UseMilli), Percent: -1})
	}
	render(c, http.StatusOK, templates.Cluster(h.page(c, "Cluster", "cluster"), d))
}

// markForeign shows, on the Slurm nodes' GPUs, those that jobs submitted to Slurm
// outside Gantry hold (free GPUs of the model each holds, node by node), so they count
// as in use, and lists those jobs.
// shareGPUs makes the Gantry nodes that are up and are one Slurm node (in the
// partitions of several pools) show one set of GPUs: the first's, holding what
// Gantry's jobs hold on any of them, GPU by index; what jobs outside Gantry hold is
// then marked on all at once. It returns the groups (models.SharedSlurmNodes).
func shareGPUs(nodes []models.Node, up map[int64]bool, gpus map[int64][]templates.ClusterGPU) map[int64]int64 {
	var live []models.Node
	for _, n := range nodes {
		if up[n.ID] {
			live = append(live, n)
		}
	}
	shared := models.SharedSlurmNodes(live)
	for _, n := range live {
		first, ok := shared[n.ID]
		if !ok || first == n.ID {
			continue
		}
		into := gpus[first]
		for _, g := range gpus[n.ID] {
			for i := range into {
				if into[i].Index == g.Index {
					into[i].InUseMilli = min(into[i].InUseMilli+g.InUseMilli, 1000)
					into[i].Jobs = append(into[i].Jobs, g.Jobs...)
				}
			}
		}
	}
	for _, n := range live {
		if first, ok := shared[n.ID]; ok {
			gpus[n.ID] = gpus[first]
		}
	}
	return shared
}

// sameSlurmNode names the other Gantry nodes of the node's Slurm node, if any.
func sameSlurmNode(id int64, nodes []models.Node, shared map[int64]int64) []string {
	first, ok := shared[id]
	if !ok {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if f, ok := shared[n.ID]; ok && f == first && n.ID != id {
			out = append(out, n.Name)
		}
	}
	return out
}

func markForeign(jobs []models.SlurmForeignJob, nodes []models.Node, pools []models.NodePool, gpus map[int64][]templates.ClusterGPU) []templates.ClusterForeign {
	nodeID := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		nodeID[n.Name] = n.ID
	}
	poolName := make(map[int64]string, len(pools))
	for _, p := range pools {
		poolName[p.ID] = p.Name
	}
	out := make([]templates.ClusterForeign, 0, len(jobs))
	for _, j := range jobs {
		var names []string
		_ = json.Unmarshal([]byte(j.Nodes), &names)
		f := templates.ClusterForeign{Pool: poolName[j.PoolID], ID: j.SlurmJobID, Name: j.Name, User: j.User, State: j.State, Reason: j.Reason,
			GPUs: "none", Nodes: strings.Join(names, ", ")}
		if j.GPUs > 0 {
			f.GPUs = strconv.Itoa(j.GPUs) + "× " + orAny(j.GPUModel) + " per node"
		}
		out = append(out, f)
		if j.State != "RUNNING" {
			continue
		}
		for _, name := range names {
			gs, want := gpus[nodeID[name]], j.GPUs
			for i := range gs {
				if want > 0 && gs[i].InUseMilli == 0 && len(gs[i].Slices) == 0 && (j.GPUModel == "" || gs[i].Model == j.GPUModel) {
					gs[i].InUseMilli, gs[i].Foreign = 1000, append(gs[i].Foreign, j.SlurmJobID)
					want--
				}
			}
		}
	}
	return out
}
