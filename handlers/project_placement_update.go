package handlers

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/templates"
)

// ProjectPlacementUpdate sets a project's placement policy: allowed pools and regions,
// and confidential-computing nodes only.
func (h *Handler) ProjectPlacementUpdate(c *gin.Context) {
	regionsText := c.PostForm("regions")
	pl := directory.Placement{Pools: c.PostFormArray("pools"), ConfidentialOnly: c.PostForm("confidential_only") == "true"}
	for _, r := range strings.Split(regionsText, ",") {
		if r = strings.TrimSpace(r); r != "" {
			pl.Regions = append(pl.Regions, r)
		}
	}
	p, err := h.dir.SetPlacement(c.Request.Context(), c.Param("project"), pl)
	if h.adminFailed(c, err, func(fe *models.FieldError) {
		h.renderProjectAdmin(c, http.StatusBadRequest, templates.ProjectAdminData{Form: templates.MemberForm{Role: models.RoleMember},
			Placement: templates.PlacementForm{Error: fieldMessage(fe), Field: fe.Field, Regions: regionsText, ConfidentialOnly: pl.ConfidentialOnly}})
	}) {
		return
	}
	redirectNotice(c, "/admin/projects/"+p.Name, capitalize(placementText(p))+"; the scheduler applies it from its next pass.")
}
