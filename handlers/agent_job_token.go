package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// AgentJobToken mints a new job token for an attempt that has not started, for an
// agent that lost the lease answer carrying the first.
func (h *Handler) AgentJobToken(c *gin.Context, node *models.Node) {
	var ref agentapi.AttemptRef
	if !decodeAgent(c, &ref) {
		return
	}
	token, err := h.dispatch.ReissueJobToken(c.Request.Context(), node, ref)
	if err != nil {
		h.agentError(c, err)
		return
	}
	c.JSON(http.StatusOK, agentapi.JobTokenResponse{JobToken: token})
}
