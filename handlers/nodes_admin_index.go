package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// nodesPerPage is how many nodes one page of the console lists: each row carries its
// actions, and a thousand rows made a page of over a megabyte.
const nodesPerPage = 100

// NodesAdminIndex lists the nodes with their GPUs, MIG layout, driver, health and labels,
// and for admins the state actions, a page of nodesPerPage at a time, narrowed by
// ?name=, ?state= and ?pool=. Removed nodes are left out unless ?removed=1.
func (h *Handler) NodesAdminIndex(c *gin.Context) {
	ctx := c.Request.Context()
	show, ok := h.removedOnPage(c)
	if !ok {
		return
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	filter, ok := h.nodeFilterOf(c, "/admin/nodes", nodesPerPage, show, pools)
	if !ok {
		return
	}
	nodes, removed, err := h.listedNodes(ctx, show)
	if err != nil {
		h.serverError(c, err)
		return
	}
	nodes, view := filter.apply(nodes)
	fleet, err := h.nodeFleet(ctx, nodes, pools)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d := templates.NodesAdminData{Notice: c.Query("notice"), CanAdmin: canAdmin(c), Removed: removed, ShowRemoved: show, Filter: view}
	for _, n := range nodes {
		row := fleet.row(n)
		row.Back = view.Here
		d.Nodes = append(d.Nodes, row)
	}
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"node", "join_token"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.NodesAdmin(h.page(c, "Nodes", "admin"), d))
}

// nodeFleet is what the node rows need besides the nodes: devices, MIG instances,
// pool names and what runs where.
type nodeFleet struct {
	devices map[int64][]models.GPUDevice
	slices  map[int64][]models.GPUSlice // by device id
	pools   map[int64]string
	running map[int64]int
}

func (h *Handler) nodeFleet(ctx context.Context, nodes []models.Node, pools []models.NodePool) (*nodeFleet, error) {
	f := &nodeFleet{devices: map[int64][]models.GPUDevice{}, slices: map[int64][]models.GPUSlice{}, pools: map[int64]string{}}
	ids := make([]int64, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	devs, err := h.store.DevicesOfNodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	devIDs := make([]int64, len(devs))
	for i, d := range devs {
		f.devices[d.NodeID] = append(f.devices[d.NodeID], d)
		devIDs[i] = d.ID
	}
	sl, err := h.store.SlicesOfDevices(ctx, devIDs)
	if err != nil {
		return nil, err
	}
	for _, s := range sl {
		f.slices[s.DeviceID] = append(f.slices[s.DeviceID], s)
	}
	for _, p := range pools {
		f.pools[p.ID] = p.Name
	}
	if f.running, err = h.store.ActiveAllocationCounts(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// row describes a node for the console.
func (f *nodeFleet) row(n models.Node) templates.NodeAdminRow {
	r := templates.NodeAdminRow{Name: n.Name, State: n.State, StateReason: n.StateReason, Driver: n.DriverVersion,
		Simulated: n.Simulated, Confidential: n.Confidential, Running: f.running[n.ID], Healthy: true, Removed: removedDate(n)}
	if n.RemovedAt != nil {
		r.RemovedAt = n.RemovedAt.UTC().Format(time.DateTime)
	}
	if n.CUDAVersion != "" {
		r.Driver += " (CUDA " + n.CUDAVersion + ")"
	}
	if n.PoolID != nil {
		r.Pool = f.pools[*n.PoolID]
	}
	if n.DrainDeadline != nil {
		r.DrainDeadline = n.DrainDeadline.UTC().Format(time.DateTime)
	}
	if n.LastHeartbeatAt != nil {
		r.Heartbeat = n.LastHeartbeatAt.UTC().Format(time.DateTime)
	}
	r.Labels = labelList(n.Labels)
	devs := f.devices[n.ID]
	count := map[string]int{}
	var unhealthy, mig []string
	for _, d := range devs {
		count[fmt.Sprintf("%s (%s)", d.Model, mibText(d.MemoryMiB))]++
		if !d.Healthy {
			unhealthy = append(unhealthy, fmt.Sprintf("GPU %d: %s", d.Index, d.HealthReason))
		}
		if d.MIGEnabled {
			var profiles []string
			for _, s := range f.slices[d.ID] {
				profiles = append(profiles, s.Profile)
			}
			mig = append(mig, fmt.Sprintf("GPU %d %s", d.Index, strings.Join(profiles, "+")))
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d × %s", count[k], k))
	}
	r.GPUs = strings.Join(parts, ", ")
	if r.GPUs == "" {
		r.GPUs = "no GPU"
	}
	r.MIG = strings.Join(mig, "; ")
	switch {
	case len(devs) == 0:
		r.Health = "no GPU to check"
	case len(unhealthy) == 0:
		r.Health = "all GPUs healthy"
	default:
		r.Healthy, r.Health = false, strings.Join(unhealthy, "; ")
	}
	return r
}

// labelList writes a node's labels (a JSON object) as sorted key=value strings.
func labelList(labels string) []string {
	m := map[string]string{}
	if labels == "" || json.Unmarshal([]byte(labels), &m) != nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// mibText writes a size in MiB as GiB when it is one or more, to a tenth: cards and
// machines report sizes such as 23,034 MiB, whose GiB run to nine decimals.
func mibText(n int64) string {
	if n >= 1024 {
		return strconv.FormatFloat(math.Round(float64(n)/1024*10)/10, 'f', -1, 64) + " GiB"
	}
	return fmt.Sprintf("%d MiB", n)
}
