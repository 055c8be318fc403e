package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
)

// nodeRemoveRequest is the body of POST /api/v1/nodes/:name/remove, which may be left
// out.
type nodeRemoveRequest struct {
	Reason string `json:"reason"`
}

// NodeRemoveAPI takes a node out of service for good, as the console's Remove does:
// refused while jobs run there.
func (h *Handler) NodeRemoveAPI(c *gin.Context) {
	var req nodeRemoveRequest
	if c.Request.ContentLength != 0 && h.failed(c, readJSON(c, &req, `{"reason": "…"}`), nil) {
		return
	}
	if len(req.Reason) > 500 {
		jsonError(c, http.StatusBadRequest, "invalid", "reason must be at most 500 characters", "reason")
		return
	}
	reason := "removed by " + principal(c).User.Username
	if req.Reason != "" {
		reason += ": " + req.Reason
	}
	n, err := h.dispatch.RemoveNode(c.Request.Context(), c.Param("name"), reason)
	if errors.Is(err, store.ErrNotFound) {
		jsonError(c, http.StatusNotFound, "not_found", "there is no node "+c.Param("name"), "name")
		return
	}
	if h.failed(c, err, nil) {
		return
	}
	c.JSON(http.StatusOK, gin.H{"name": n.Name, "state": n.State, "state_reason": n.StateReason, "removed_at": n.RemovedAt})
}
