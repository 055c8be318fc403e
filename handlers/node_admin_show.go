package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// NodeAdminShow shows one node: its GPUs one by one with MIG layout and health, its
// labels and pool to edit, and what changed on it.
func (h *Handler) NodeAdminShow(c *gin.Context) {
	h.renderNodeAdmin(c, http.StatusOK, templates.NodeAdminData{Notice: c.Query("notice")}, nil)
}

// renderNodeAdmin renders the node page; labels, when not nil, is the text typed.
func (h *Handler) renderNodeAdmin(c *gin.Context, status int, d templates.NodeAdminData, labels *string) {
	ctx := c.Request.Context()
	n, err := h.store.NodeByName(ctx, c.Param("name"))
	if errors.Is(err, store.ErrNotFound) {
		h.errorPage(c, http.StatusNotFound, "No such node", "There is no node "+c.Param("name")+". See every node on the nodes page.")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	fleet, err := h.nodeFleet(ctx, []models.Node{*n})
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Node = fleet.row(*n)
	d.CCState, d.CCKnown = n.CCState, n.CCState == "on" || n.CCState == "off"
	for _, g := range fleet.devices[n.ID] {
		row := templates.GPUAdminRow{Index: g.Index, UUID: g.UUID, Model: g.Model, Memory: mibText(g.MemoryMiB), Healthy: g.Healthy, Reason: g.HealthReason}
		for _, s := range fleet.slices[g.ID] {
			row.MIG = append(row.MIG, fmt.Sprintf("%s (%s, %s)", s.Profile, mibText(s.MemoryMiB), s.UUID))
		}
		d.GPUs = append(d.GPUs, row)
	}
	d.LabelsText = strings.Join(d.Node.Labels, "\n")
	if labels != nil {
		d.LabelsText = *labels
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, p := range pools {
		d.Pools = append(d.Pools, p.Name)
	}
	d.CanAdmin = canAdmin(c)
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"node"}, ObjectID: n.Name}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.NodeAdmin(h.page(c, "Node "+n.Name, "admin"), d))
}
