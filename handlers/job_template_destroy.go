package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// JobTemplateDestroy deletes the template :name of the route's project: who saved it
// may, and the project's team leads and admins.
func (h *Handler) JobTemplateDestroy(c *gin.Context) {
	p, name := routeProject(c), c.Param("name")
	err := h.jobs.DeleteTemplate(c.Request.Context(), principal(c).User, permission(c).CanManage(authz.Project), p, name)
	var ny *jobs.NotYoursError
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonError(c, http.StatusNotFound, "not_found", "project "+p.Name+" has no template called "+name, "name")
	case errors.As(err, &ny):
		h.deny(c, "Not your template", Sentence(ny.Error()))
	case err != nil:
		h.serverError(c, err)
	default:
		c.Status(http.StatusNoContent)
	}
}
