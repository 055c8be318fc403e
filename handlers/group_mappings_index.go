package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// GroupMappingsIndex lists the identity-provider group mappings and the form to add one.
func (h *Handler) GroupMappingsIndex(c *gin.Context) {
	h.renderGroups(c, http.StatusOK, templates.GroupsData{Notice: c.Query("notice"), Form: templates.GroupForm{Role: models.RoleMember}})
}

func (h *Handler) renderGroups(c *gin.Context, status int, d templates.GroupsData) {
	ctx := c.Request.Context()
	mappings, err := h.dir.GroupMappings(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, m := range mappings {
		d.Mappings = append(d.Mappings, templates.GroupRow{ID: m.ID, Group: m.Group, Role: m.Role, Scope: m.Scope()})
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, t := range teams {
		if !t.Archived {
			d.Teams = append(d.Teams, t.Name)
		}
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, p := range projects {
		if !p.Archived {
			d.Projects = append(d.Projects, p.Name)
		}
	}
	d.Roles = append(append([]string{}, models.ProjectRoles...), models.RoleAuditor, models.RoleAdmin)
	d.CanAdmin, d.SSO = canAdmin(c), h.identity.SSOEnabled()
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"group_mapping"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.Groups(h.page(c, "Group mappings", "admin"), d))
}
