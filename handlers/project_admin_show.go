package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strings"

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
		h.missingPage(c, "No such project", "There is no project "+c.Param("project")+".", templates.Link{Href: "/admin/teams", Text: "See all projects on the teams page"})
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
	if err := h.fillPlacement(c, p, &d.Placement); err != nil {
		h.serverError(c, err)
		return
	}
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ProjectID: &p.ID}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.ProjectAdmin(h.page(c, "Project "+p.Name, "admin"), d))
}

// fillPlacement puts the project's placement policy into the form, unless the form
// holds what was typed (after an error).
func (h *Handler) fillPlacement(c *gin.Context, p *models.Project, f *templates.PlacementForm) error {
	pools, regions, err := p.PlacementLists()
	if err != nil {
		return err
	}
	all, err := h.store.NodePools(c.Request.Context())
	if err != nil {
		return err
	}
	typed := f.Error != ""
	f.Summary = capitalize(placementText(p))
	for _, pl := range all {
		allowed := slices.Contains(pools, pl.Name)
		if typed {
			allowed = slices.Contains(c.PostFormArray("pools"), pl.Name)
		}
		f.Pools = append(f.Pools, templates.PoolChoice{Name: pl.Name, Region: pl.Region, Allowed: allowed})
	}
	if !typed {
		f.Regions, f.ConfidentialOnly = strings.Join(regions, ", "), p.ConfidentialOnly
	}
	return nil
}
