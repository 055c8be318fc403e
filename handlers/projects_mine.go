package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// ProjectsMine lists the projects where the signed-in person holds a role.
func (h *Handler) ProjectsMine(c *gin.Context) {
	roles, err := h.store.ProjectRolesOfUser(c.Request.Context(), principal(c).User.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	var d templates.MyProjectsData
	for _, r := range roles {
		d.Projects = append(d.Projects, templates.MyProjectRow{Name: r.Project, Team: r.Team, Role: r.Role})
	}
	render(c, http.StatusOK, templates.MyProjects(h.page(c, "Your projects", ""), d))
}
