package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// TeamCreate creates a team from the console's form; bad input re-shows the form.
func (h *Handler) TeamCreate(c *gin.Context) {
	form := templates.NameForm{Name: c.PostForm("name"), DisplayName: c.PostForm("display_name")}
	t, err := h.dir.CreateTeam(c.Request.Context(), form.Name, form.DisplayName)
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderTeams(c, http.StatusBadRequest, templates.TeamsData{Form: "team", TeamForm: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	redirectNotice(c, "/admin/teams", "Created team "+t.Name+". Add its first project below.")
}
