package handlers

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// TeamArchive archives a team with its projects (after confirmation), or restores it.
func (h *Handler) TeamArchive(c *gin.Context) {
	archived, ok := h.boolField(c, "archived")
	if !ok {
		return
	}
	name := c.Param("team")
	if archived && !h.confirmed(c, templates.ConfirmData{
		Heading: "Archive team " + name + "?",
		Message: "Every project of " + name + " is archived with it and takes no new jobs. Jobs that run now keep running. You can restore the team later; its projects are restored one by one.",
		Button:  "Archive team", Back: "/admin/teams",
	}, "archived") {
		return
	}
	t, err := h.dir.SetTeamArchived(c.Request.Context(), name, archived)
	if h.adminFailed(c, err, nil) {
		return
	}
	msg := "Restored team " + t.Name + "."
	if t.Archived {
		msg = "Archived team " + t.Name + " and its projects."
	}
	redirectNotice(c, "/admin/teams", msg)
}
