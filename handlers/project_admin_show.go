package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// ProjectAdminShow shows one project in the console: its members, their roles and
// what changed in it.
func (h *Handler) ProjectAdminShow(c *gin.Context) {
	h.renderProjectAdmin(c, http.StatusOK, templates.ProjectAdminData{Notice: c.Query("notice"), Form: templates.MemberForm{Role: models.RoleMember}})
}

func (h *Handler) renderProjectAdmin(c *gin.Context, status int, d templates.ProjectAdminData) {
	ctx := c.Request.Context()
	p, err := h.store.ProjectByName(ctx, c.Param("project"))
	if errors.Is(err, store.ErrNotFound) {
		h.errorPage(c, http.StatusNotFound, "No such project", "There is no project "+c.Param("project")+". See all projects on the teams page.")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	team, err := h.store.TeamByID(ctx, p.TeamID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	members, err := h.store.MembersOfProject(ctx, p.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	users, err := h.store.Users(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Name, d.DisplayName, d.Team, d.Archived = p.Name, p.DisplayName, team.Name, p.Archived
	d.Roles, d.CanAdmin = models.ProjectRoles, canAdmin(c)
	for _, m := range members {
		d.Members = append(d.Members, templates.MemberRow{Username: m.Username, DisplayName: m.DisplayName, Role: m.Role})
	}
	for _, u := range users {
		if !u.Disabled {
			d.Usernames = append(d.Usernames, u.Username)
		}
	}
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ProjectID: &p.ID}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.ProjectAdmin(h.page(c, "Project "+p.Name, "admin"), d))
}
