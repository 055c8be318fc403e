package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// AgentLogs stores a chunk of an attempt's output and answers the next offset, and
// whether the stream is full.
func (h *Handler) AgentLogs(c *gin.Context, node *models.Node) {
	var chunk agentapi.LogChunk
	if !decodeAgent(c, &chunk) {
		return
	}
	ack, err := h.dispatch.AppendLog(c.Request.Context(), node, chunk)
	if err != nil {
		h.agentError(c, err)
		return
	}
	c.JSON(http.StatusOK, ack)
}
