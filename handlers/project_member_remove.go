package handlers

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// ProjectMemberRemove takes a person's role in the project away, after confirmation.
func (h *Handler) ProjectMemberRemove(c *gin.Context) {
	project, user := c.Param("project"), c.Param("user")
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Remove " + user + " from " + project + "?",
		Message: user + " loses their role in " + project + " at once: they can no longer see its jobs or submit new ones. Their running jobs keep running.",
		Button:  "Remove from project", Back: "/admin/projects/" + project,
	}) {
		return
	}
	u, p, err := h.dir.RemoveFromProject(c.Request.Context(), project, user)
	if h.adminFailed(c, err, nil) {
		return
	}
	redirectNotice(c, "/admin/projects/"+p.Name, u.Username+" no longer holds a role in "+p.Name+".")
}
