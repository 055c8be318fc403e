package handlers

import (
	"context"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// projectsReading lists the projects, by name, where a role of the user lets them read obj.
func (h *Handler) projectsReading(ctx context.Context, userID int64, obj authz.Object) ([]store.ProjectRole, error) {
	roles, err := h.store.ProjectRolesOfUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := roles[:0]
	for _, r := range roles {
		perm, err := h.authz.InProject(ctx, userID, r.ProjectID)
		if err != nil {
			return nil, err
		}
		if perm.CanRead(obj) {
			out = append(out, r)
		}
	}
	return out, nil
}

// jobScope is where the caller may list jobs: everywhere for those who read jobs
// platform-wide (admins, auditors), else the projects where they read jobs.
func (h *Handler) jobScope(c *gin.Context, user *models.User) (jobs.Scope, error) {
	scope, _, err := h.jobScopeNamed(c, user)
	return scope, err
}

// jobScopeNamed is jobScope and the names of its projects, sorted, which the query
// that finds them reads too (nil for everywhere): the jobs page's project filter needs
// no query of its own.
func (h *Handler) jobScopeNamed(c *gin.Context, user *models.User) (jobs.Scope, []string, error) {
	if permission(c).CanRead(authz.Jobs) {
		return jobs.Scope{All: true}, nil, nil
	}
	ps, err := h.projectsReading(c.Request.Context(), user.ID, authz.Jobs)
	if err != nil {
		return jobs.Scope{}, nil, err
	}
	scope, names := jobs.Scope{ProjectIDs: make([]int64, 0, len(ps))}, make([]string, 0, len(ps))
	for _, p := range ps {
		scope.ProjectIDs = append(scope.ProjectIDs, p.ProjectID)
		names = append(names, p.Project)
	}
	slices.Sort(scope.ProjectIDs)
	slices.Sort(names)
	return scope, names, nil
}
