package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// AgentReport applies an agent's report that an attempt started or exited.
func (h *Handler) AgentReport(c *gin.Context, node *models.Node) {
	var r agentapi.Report
	if !decodeAgent(c, &r) {
		return
	}
	if err := h.dispatch.Report(c.Request.Context(), node, r); err != nil {
		h.agentError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
