package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// ProjectCreate creates a project in a team from the console's form.
func (h *Handler) ProjectCreate(c *gin.Context) {
	form := templates.NameForm{Team: c.PostForm("team"), Name: c.PostForm("name"), DisplayName: c.PostForm("display_name")}
	p, err := h.dir.CreateProject(c.Request.Context(), form.Team, form.Name, form.DisplayName)
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderTeams(c, http.StatusBadRequest, templates.TeamsData{Form: "project", ProjectForm: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	redirectNotice(c, "/admin/projects/"+p.Name, "Created project "+p.Name+". Grant people roles in it below.")
}
