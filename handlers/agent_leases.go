package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// AgentLeases answers every allocation wanted on the node; with ?version= of
// the last answer and ?wait=25s it waits for a change first (a long poll).
func (h *Handler) AgentLeases(c *gin.Context, node *models.Node) {
	var wait time.Duration
	if w := c.Query("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d < 0 || d > dispatch.MaxLeaseWait {
			jsonError(c, http.StatusBadRequest, "invalid", "wait must be a duration between 0s and "+dispatch.MaxLeaseWait.String(), "wait")
			return
		}
		wait = d
	}
	res, err := h.dispatch.Leases(c.Request.Context(), node, c.Query("version"), wait)
	if err != nil {
		h.agentError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
