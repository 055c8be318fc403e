package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// meView is GET /api/v1/me: who the caller is and what they hold.
type meView struct {
	ID          int64           `json:"id"`
	Username    string          `json:"username"`
	Email       string          `json:"email"`
	DisplayName string          `json:"display_name"`
	SSO         bool            `json:"sso"`
	GlobalRoles []string        `json:"global_roles"`
	Teams       []string        `json:"teams"`
	Projects    []meProjectView `json:"projects"`
	Via         string          `json:"via"` // session or token
	TokenScope  string          `json:"token_scope,omitempty"`
}

type meProjectView struct {
	Name string `json:"name"`
	Team string `json:"team"`
	Role string `json:"role"`
}

// MeShow answers the caller's user, teams, projects and roles.
func (h *Handler) MeShow(c *gin.Context) {
	p := principal(c)
	roles, err := h.store.ProjectRolesOfUser(c.Request.Context(), p.User.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	v := meView{ID: p.User.ID, Username: p.User.Username, Email: p.User.Email, DisplayName: p.User.DisplayName,
		SSO: p.User.Issuer != "", GlobalRoles: []string{}, Teams: []string{}, Projects: []meProjectView{}, Via: "session"}
	if p.User.IsAdmin {
		v.GlobalRoles = append(v.GlobalRoles, "admin")
	}
	if p.User.IsAuditor {
		v.GlobalRoles = append(v.GlobalRoles, "auditor")
	}
	seen := map[string]bool{}
	for _, r := range roles {
		v.Projects = append(v.Projects, meProjectView{Name: r.Project, Team: r.Team, Role: r.Role})
		if !seen[r.Team] {
			seen[r.Team] = true
			v.Teams = append(v.Teams, r.Team)
		}
	}
	if p.Token != nil {
		v.Via, v.TokenScope = "token", p.Token.Scope
	}
	c.JSON(http.StatusOK, v)
}
