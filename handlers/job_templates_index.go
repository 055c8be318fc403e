package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// JobTemplatesIndex shows the job templates of the route's project, with rename and
// delete where the user may change them.
func (h *Handler) JobTemplatesIndex(c *gin.Context) {
	h.renderJobTemplates(c, http.StatusOK, templates.JobTemplatesData{Notice: c.Query("notice")})
}

func (h *Handler) renderJobTemplates(c *gin.Context, status int, d templates.JobTemplatesData) {
	p, perm, user := routeProject(c), permission(c), principal(c).User
	list, err := h.jobs.Templates(c.Request.Context(), p)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Project, d.CanSubmit = p.Name, perm.CanWrite(authz.Jobs) && !p.Archived
	for _, t := range list {
		image := t.Spec.Image
		if image == "" {
			image = "the project's default image"
		}
		d.Rows = append(d.Rows, templates.JobTemplateRow{
			Name: t.Name, Summary: resourceSummary(t.Spec.Resources) + " · " + t.Spec.PriorityClass, Image: image,
			Command: jobs.JoinCommand(t.Spec.Command), SavedBy: t.CreatedBy, SavedAt: t.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"),
			CanChange: perm.CanWrite(authz.Jobs) && (t.CreatedByID == user.ID || perm.CanManage(authz.Project)),
		})
	}
	render(c, status, templates.JobTemplates(h.page(c, "Templates of "+p.Name, "jobs"), d))
}
