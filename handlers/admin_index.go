package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// consoleObjects are the kinds of object the console changes, for its front page's changes.
var consoleObjects = []string{"team", "project", "user", "group_mapping", "setting", "image", "node", "join_token", "quota", "priority_class"}

// AdminIndex shows the admin console's sections and the newest changes made through it.
func (h *Handler) AdminIndex(c *gin.Context) {
	rows, err := h.recentChanges(c.Request.Context(), store.AuditFilter{ObjectTypes: consoleObjects})
	if err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.Admin(h.page(c, "Admin console", "admin"), templates.AdminData{Changes: rows}))
}
