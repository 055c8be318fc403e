package handlers

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// GroupMappingDelete removes a group mapping after confirmation.
func (h *Handler) GroupMappingDelete(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.missingPage(c, "No such group mapping", "There is no group mapping "+c.Param("id")+".", templates.Link{Href: "/admin/groups", Text: "The groups page lists them all"})
		return
	}
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Remove this group mapping?",
		Message: "New sign-ins no longer get its role. People who got the role already keep it: remove them from the project to take it away.",
		Button:  "Remove mapping", Back: "/admin/groups",
	}) {
		return
	}
	m, err := h.dir.DeleteGroupMapping(c.Request.Context(), id)
	if h.adminFailed(c, err, nil) {
		return
	}
	redirectNotice(c, "/admin/groups", "Removed the mapping of "+m.Group+" to "+m.Role+" ("+m.Scope()+").")
}
