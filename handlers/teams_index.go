package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// TeamsIndex lists teams with their projects and, for admins, the forms to create them.
func (h *Handler) TeamsIndex(c *gin.Context) {
	h.renderTeams(c, http.StatusOK, templates.TeamsData{Notice: c.Query("notice")})
}

func (h *Handler) renderTeams(c *gin.Context, status int, d templates.TeamsData) {
	ctx := c.Request.Context()
	teams, err := h.store.Teams(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	members, err := h.store.MemberCounts(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	byTeam := map[int64][]templates.ProjectRow{}
	for _, p := range projects {
		byTeam[p.TeamID] = append(byTeam[p.TeamID], templates.ProjectRow{Name: p.Name, DisplayName: p.DisplayName, Archived: p.Archived, Members: members[p.ID]})
	}
	for _, t := range teams {
		d.Teams = append(d.Teams, templates.TeamRow{Name: t.Name, DisplayName: t.DisplayName, Archived: t.Archived, Projects: byTeam[t.ID]})
	}
	d.CanAdmin = canAdmin(c)
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"team", "project"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.Teams(h.page(c, "Teams and projects", "admin"), d))
}
