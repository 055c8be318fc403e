package handlers

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// projectIDsReading lists the projects where a role of the user lets them read obj.
func (h *Handler) projectIDsReading(ctx context.Context, userID int64, obj authz.Object) ([]int64, error) {
	ms, err := h.store.MembershipsOfUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := []int64{}
	for _, m := range ms {
		perm, err := h.authz.InProject(ctx, userID, m.ProjectID)
		if err != nil {
			return nil, err
		}
		if perm.CanRead(obj) {
			out = append(out, m.ProjectID)
		}
	}
	return out, nil
}

// jobScope is where the caller may list jobs: everywhere for those who read jobs
// platform-wide (admins, auditors), else the projects where they read jobs.
func (h *Handler) jobScope(c *gin.Context, user *models.User) (jobs.Scope, error) {
	if permission(c).CanRead(authz.Jobs) {
		return jobs.Scope{All: true}, nil
	}
	ids, err := h.projectIDsReading(c.Request.Context(), user.ID, authz.Jobs)
	if err != nil {
		return jobs.Scope{}, err
	}
	scope := jobs.Scope{ProjectIDs: ids}
	return scope, nil
}
