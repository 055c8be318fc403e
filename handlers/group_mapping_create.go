package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/templates"
)

// GroupMappingCreate maps an identity-provider group to a role; bad input re-shows the form.
func (h *Handler) GroupMappingCreate(c *gin.Context) {
	form := templates.GroupForm{Group: c.PostForm("group"), Role: c.PostForm("role"), Team: c.PostForm("team"), Project: c.PostForm("project")}
	_, err := h.dir.CreateGroupMapping(c.Request.Context(), directory.GroupMappingInput{Group: form.Group, Role: form.Role, Team: form.Team, Project: form.Project})
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderGroups(c, http.StatusBadRequest, templates.GroupsData{Form: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	redirectNotice(c, "/admin/groups", "Members of "+form.Group+" get "+form.Role+" at their next sign-in.")
}
