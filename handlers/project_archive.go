package handlers

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// ProjectArchive archives a project (after confirmation), or restores it.
func (h *Handler) ProjectArchive(c *gin.Context) {
	archived, ok := h.boolField(c, "archived")
	if !ok {
		return
	}
	name := c.Param("project")
	if archived && !h.confirmed(c, templates.ConfirmData{
		Heading: "Archive project " + name + "?",
		Message: "The project takes no new jobs; jobs that run now keep running. Members keep their roles and can still read it. You can restore it later.",
		Button:  "Archive project", Back: "/admin/projects/" + name,
	}, "archived") {
		return
	}
	p, err := h.dir.SetProjectArchived(c.Request.Context(), name, archived)
	if h.adminFailed(c, err, nil) {
		return
	}
	msg := "Restored project " + p.Name + "."
	if p.Archived {
		msg = "Archived project " + p.Name + "."
	}
	redirectNotice(c, "/admin/projects/"+p.Name, msg)
}
