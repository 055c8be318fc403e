package handlers

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// projectsReading lists the projects where a role of the user lets them read obj.
func (h *Handler) projectsReading(ctx context.Context, userID int64, obj authz.Object) ([]models.Project, error) {
	ms, err := h.store.MembershipsOfUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []models.Project
	for _, m := range ms {
		perm, err := h.authz.InProject(ctx, userID, m.ProjectID)
		if err != nil {
			return nil, err
		}
		if !perm.CanRead(obj) {
			continue
		}
		p, err := h.store.ProjectByID(ctx, m.ProjectID)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// jobScope is where the caller may list jobs: everywhere for those who read jobs
// platform-wide (admins, auditors), else the projects where they read jobs.
func (h *Handler) jobScope(c *gin.Context, user *models.User) (jobs.Scope, error) {
	if permission(c).CanRead(authz.Jobs) {
		return jobs.Scope{All: true}, nil
	}
	ps, err := h.projectsReading(c.Request.Context(), user.ID, authz.Jobs)
	if err != nil {
		return jobs.Scope{}, err
	}
	scope := jobs.Scope{ProjectIDs: []int64{}}
	for _, p := range ps {
		scope.ProjectIDs = append(scope.ProjectIDs, p.ID)
	}
	return scope, nil
}
