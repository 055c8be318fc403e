package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// AgentJoin registers a node that presents a join token and answers its credential.
func (h *Handler) AgentJoin(c *gin.Context) {
	agentActor(c)
	var req agentapi.JoinRequest
	if !decodeAgent(c, &req) {
		return
	}
	res, err := h.dispatch.Join(c.Request.Context(), req)
	if err != nil {
		h.agentError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
