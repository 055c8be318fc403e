package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// nodeStateRequest is the body of POST /api/v1/nodes/:name/state.
type nodeStateRequest struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
	// DrainFor is how long running jobs may go on before they are checkpoint-stopped.
	DrainFor string `json:"drain_for"`
}

// NodeStateUpdate is an admin's action on a node: cordon, drain, ready or down.
func (h *Handler) NodeStateUpdate(c *gin.Context) {
	var req nodeStateRequest
	if h.failed(c, readJSON(c, &req, `{"state": "ready|cordoned|draining|down", "reason": "…", "drain_for": "30m"}`), nil) {
		return
	}
	var deadline time.Time
	if req.State == models.NodeDraining {
		d, err := time.ParseDuration(req.DrainFor)
		if err != nil || d < 0 {
			jsonError(c, http.StatusBadRequest, "invalid", "drain_for must be a duration such as 30m (0s stops running jobs at once)", "drain_for")
			return
		}
		deadline = time.Now().Add(d)
	}
	if len(req.Reason) > 500 {
		jsonError(c, http.StatusBadRequest, "invalid", "reason must be at most 500 characters", "reason")
		return
	}
	n, err := h.dispatch.SetNodeState(c.Request.Context(), c.Param("name"), req.State, req.Reason, deadline)
	if errors.Is(err, store.ErrNotFound) {
		jsonError(c, http.StatusNotFound, "not_found", "there is no node "+c.Param("name"), "name")
		return
	}
	if h.failed(c, err, nil) {
		return
	}
	c.JSON(http.StatusOK, gin.H{"name": n.Name, "state": n.State, "state_reason": n.StateReason, "drain_deadline": n.DrainDeadline})
}
