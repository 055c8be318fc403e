package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

type nodeJSON struct {
	Name            string     `json:"name"`
	Pool            string     `json:"pool,omitempty"`
	State           string     `json:"state"`
	StateReason     string     `json:"state_reason,omitempty"`
	DrainDeadline   *time.Time `json:"drain_deadline,omitempty"`
	Simulated       bool       `json:"simulated"`
	Runtime         string     `json:"runtime"`
	AgentVersion    string     `json:"agent_version"`
	DriverVersion   string     `json:"driver_version"`
	CUDAVersion     string     `json:"cuda_version"`
	CPUMilli        int64      `json:"cpu_milli"`
	MemoryMiB       int64      `json:"memory_mib"`
	ScratchMiB      int64      `json:"scratch_mib"`
	LastHeartbeatAt *time.Time `json:"last_heartbeat_at"`
	RemovedAt       *time.Time `json:"removed_at,omitempty"`
	GPUs            []gpuJSON  `json:"gpus"`
}

type gpuJSON struct {
	Index      int    `json:"index"`
	UUID       string `json:"uuid"`
	Model      string `json:"model"`
	MemoryMiB  int64  `json:"memory_mib"`
	MIGEnabled bool   `json:"mig_enabled"`
	Healthy    bool   `json:"healthy"`
}

// NodesIndex lists the nodes with their GPUs by name, a page at a time (limit, cursor:
// next_cursor of the page before, null on the last), narrowed by state and a part of
// the name; simulated ones say so. Removed nodes are left out unless
// ?include_removed=true; "removed" counts them either way.
func (h *Handler) NodesIndex(c *gin.Context) {
	ctx := c.Request.Context()
	f, err := h.nodesAPIQuery(c)
	if h.failed(c, err, nil) {
		return
	}
	removed, err := h.store.CountRemovedNodes(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	limit := f.Limit
	f.Limit++
	nodes, err := h.store.NodesPage(ctx, f)
	if err != nil {
		h.serverError(c, err)
		return
	}
	nodes, next := nextNodeCursor(nodes, limit)
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	poolName := make(map[int64]string, len(pools))
	for _, p := range pools {
		poolName[p.ID] = p.Name
	}
	ids := make([]int64, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	devs, err := h.store.DevicesOfNodes(ctx, ids)
	if err != nil {
		h.serverError(c, err)
		return
	}
	gpus := map[int64][]gpuJSON{}
	for _, d := range devs {
		gpus[d.NodeID] = append(gpus[d.NodeID], gpuJSON{Index: d.Index, UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB, MIGEnabled: d.MIGEnabled, Healthy: d.Healthy})
	}
	out := make([]nodeJSON, len(nodes))
	for i, n := range nodes {
		out[i] = nodeJSON{
			Name: n.Name, State: n.State, StateReason: n.StateReason, DrainDeadline: n.DrainDeadline, Simulated: n.Simulated,
			Runtime: n.Runtime, AgentVersion: n.AgentVersion, DriverVersion: n.DriverVersion, CUDAVersion: n.CUDAVersion,
			CPUMilli: n.CPUMilli, MemoryMiB: n.MemoryMiB, ScratchMiB: n.ScratchMiB, LastHeartbeatAt: n.LastHeartbeatAt, RemovedAt: n.RemovedAt, GPUs: gpus[n.ID],
		}
		if out[i].GPUs == nil {
			out[i].GPUs = []gpuJSON{}
		}
		if n.PoolID != nil {
			out[i].Pool = poolName[*n.PoolID]
		}
	}
	var cursor *string
	if next != "" {
		cursor = &next
	}
	c.JSON(http.StatusOK, gin.H{"nodes": out, "removed": removed, "next_cursor": cursor})
}
