package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// AgentHeartbeat records that a node is alive.
func (h *Handler) AgentHeartbeat(c *gin.Context, node *models.Node) {
	var req agentapi.HeartbeatRequest
	if !decodeAgent(c, &req) {
		return
	}
	res, err := h.dispatch.Heartbeat(c.Request.Context(), node, req)
	if err != nil {
		h.agentError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
