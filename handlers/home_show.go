package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// HomeShow renders the home page with the cluster at a glance.
func (h *Handler) HomeShow(c *gin.Context) {
	ctx := c.Request.Context()
	counts, err := h.store.JobCountsByState(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	nodes, err := h.store.CountNodes(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	st, err := h.store.SchemaStatus(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.Home(h.page(c, "Home", "home"), templates.HomeData{
		Database:      h.store.Dialect(),
		SchemaVersion: st.Current,
		Nodes:         nodes,
		QueuedJobs:    counts[models.JobQueued],
		RunningJobs:   counts[models.JobRunning],
	}))
}
