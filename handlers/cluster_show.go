package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// clusterNodesPerPage is how many nodes one page of the cluster lists: each draws its
// GPUs with their readings, and a fleet of 1,000 eight-GPU nodes drawn whole was 2.6 MB
// of HTML, read again every 5 seconds.
const clusterNodesPerPage = 50

// ClusterShow is the cluster page for anyone signed in: the fleet's capacity in use and
// free, each pool's, a page of nodes by pool with their GPUs (model, health, what holds
// them, the latest utilisation) narrowed by ?name=, ?state= and ?pool=, the queue by
// priority class and team, and each team's quota use. htmx refreshes the fleet part
// every few seconds: asked so, the handler reads and answers that part alone.
// Removed nodes are left out unless ?removed=1, and never count as capacity or as nodes.
func (h *Handler) ClusterShow(c *gin.Context) {
	ctx := c.Request.Context()
	now := time.Now().UTC()
	show, ok := h.removedOnPage(c)
	if !ok {
		return
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	filter, ok := h.nodeFilterOf(c, "/cluster", clusterNodesPerPage, show, pools)
	if !ok {
		return
	}
	fleet, err := h.clusterFleet(ctx, show, pools)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d := templates.ClusterData{Removed: fleet.removed, ShowRemoved: show, Foreign: fleet.foreign}
	fleet.capacity(&d)
	d.Summary = fleet.summary(filter)
	shown, view := filter.apply(fleet.byPool())
	d.Filter = view
	if d.ReadingsAt, err = h.readGPUs(ctx, fleet, shown, now); err != nil {
		h.serverError(c, err)
		return
	}
	d.Pools = fleet.sections(shown, now)
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
