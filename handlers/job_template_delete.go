package handlers

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/authz"
)

// JobTemplateDelete deletes the template :name of the route's project: who saved it
// may, and the project's team leads and admins.
func (h *Handler) JobTemplateDelete(c *gin.Context) {
	p, name := routeProject(c), c.Param("name")
	err := h.jobs.DeleteTemplate(c.Request.Context(), principal(c).User, permission(c).CanManage(authz.Project), p, name)
	if h.templateChangeFailed(c, err, name, "") {
		return
	}
	backToTemplates(c, p, "Deleted template "+name+". Jobs started from it are not affected.")
}
