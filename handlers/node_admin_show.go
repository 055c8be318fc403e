package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
	"github.com/gantry-gpu/gantry/templates"
)

// NodeAdminShow shows one node: its GPUs one by one with MIG layout and health, their
// history over a window (?window=, default the last hour) with the health events in
// it, its labels and pool to edit, and what changed on it.
func (h *Handler) NodeAdminShow(c *gin.Context) {
	window := c.DefaultQuery("window", defaultNodeWindow)
	if _, ok := nodeWindows[window]; !ok {
		h.errorPage(c, http.StatusBadRequest, "Unknown chart window",
			fmt.Sprintf("Window %q is not one Gantry charts: choose %s.", window, strings.Join(nodeWindowNames, ", ")))
		return
	}
	h.renderNodeAdmin(c, http.StatusOK, templates.NodeAdminData{Notice: c.Query("notice"), History: templates.NodeHistoryData{Window: window}}, nil)
}

// defaultNodeWindow is the history a node's page charts unless asked for another.
const defaultNodeWindow = "1h"

// nodeWindows are the spans a node's page charts, by the name ?window= gives.
var nodeWindows = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// nodeWindowNames are nodeWindows' names, shortest first.
var nodeWindowNames = []string{"1h", "6h", "24h", "7d", "30d"}

// healthEventKinds name the kinds of health event in words.
var healthEventKinds = map[string]string{telemetry.EventXID: "XID error", telemetry.EventECC: "ECC errors", telemetry.EventThermal: "Hot"}

// nodeHistory charts the GPUs of node (their MIG instances' memory too) over the window
// ending now, and lists their health events.
func (h *Handler) nodeHistory(ctx context.Context, n *models.Node, fleet *nodeFleet, window string, now time.Time) (templates.NodeHistoryData, error) {
	if _, ok := nodeWindows[window]; !ok {
		window = defaultNodeWindow
	}
	d := templates.NodeHistoryData{Window: window, Windows: nodeWindowNames, Simulated: n.Simulated}
	var uuids []string
	index := map[string]string{}
	for _, g := range fleet.devices[n.ID] {
		uuids = append(uuids, g.UUID)
		index[g.UUID] = "GPU " + itoa(g.Index)
		for _, sl := range fleet.slices[g.ID] {
			uuids = append(uuids, sl.UUID)
			index[sl.UUID] = "GPU " + itoa(g.Index) + " " + sl.Profile
		}
	}
	if len(uuids) == 0 {
		return d, nil
	}
	hist, err := h.telemetry.NodeHistory(ctx, uuids, now.Add(-nodeWindows[window]), now, now, advice.DefaultThresholds().ThermalC)
	if err != nil {
		return d, err
	}
	d.Resolution = resolutionWords[hist.Resolution]
	if d.Charts, err = h.gpuCharts(ctx, hist.GPUs, gaugeUtil, gaugeMemory, gaugePower, gaugeTemp); err != nil {
		return d, err
	}
	for _, e := range hist.Events {
		d.Events = append(d.Events, templates.HealthEventRow{At: e.At.UTC().Format("2006-01-02 15:04:05"), GPU: index[e.DeviceUUID], UUID: e.DeviceUUID,
			Kind: healthEventKinds[e.Kind], Detail: e.Detail})
	}
	return d, nil
}

// renderNodeAdmin renders the node page; labels, when not nil, is the text typed.
func (h *Handler) renderNodeAdmin(c *gin.Context, status int, d templates.NodeAdminData, labels *string) {
	ctx := c.Request.Context()
	n, err := h.store.NodeByName(ctx, c.Param("name"))
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such node", "There is no node "+c.Param("name")+".", nodesLink)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	fleet, err := h.nodeFleet(ctx, []models.Node{*n}, pools)
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
	if d.History, err = h.nodeHistory(ctx, n, fleet, d.History.Window, time.Now().UTC()); err != nil {
		h.serverError(c, err)
		return
	}
	d.LabelsText = strings.Join(d.Node.Labels, "\n")
	if labels != nil {
		d.LabelsText = *labels
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
