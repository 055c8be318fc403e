package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// JobRerun submits a new job like job :id and opens its page, which names job :id. One that cannot run
// again as it was (its image was deprecated since) opens the form with the copy and
// the reason.
func (h *Handler) JobRerun(c *gin.Context) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	ctx := c.Request.Context()
	again, err := h.jobs.Resubmit(ctx, principal(c).User, j)
	if h.failed(c, err, func(fe *models.FieldError) {
		spec, err := h.jobs.SpecOf(ctx, j)
		if err != nil {
			h.serverError(c, err)
			return
		}
		d := templates.JobNewData{Form: formOfSpec(spec, j.ImageID != nil), RerunOf: templates.JobRef{ID: j.ID, Name: j.Name}}
		d.Field, d.Error = formError(d.Form, fe)
		h.renderJobNew(c, http.StatusBadRequest, d, false)
	}) {
		return
	}
	// The new job's page says what it re-ran (rerunOf).
	h.jobSubmitted(c, again)
}
