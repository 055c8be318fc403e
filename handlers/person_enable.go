package handlers

import (
	"github.com/gin-gonic/gin"
)

// PersonEnable lets a disabled person sign in again, with the roles they had.
func (h *Handler) PersonEnable(c *gin.Context) {
	u, err := h.dir.EnableUser(c.Request.Context(), c.Param("user"))
	if h.adminFailed(c, err, nil) {
		return
	}
	redirectNotice(c, backTo(c, "/admin/people"), u.Username+" can sign in again, with the roles they had.")
}
