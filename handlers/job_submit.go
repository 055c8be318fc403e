package handlers

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// JobSubmit submits the form's job and opens its page; a bad form is shown again with
// the field and what is wrong with it, and nothing is stored. So is a form too large to
// read, which the gate hands on cut at the body bound (web's OrFormCut).
func (h *Handler) JobSubmit(c *gin.Context) {
	form := jobFormOf(c.Request.PostForm)
	var spec jobs.Spec
	err := cutField(c)
	if err == nil {
		spec, err = specOfForm(form)
	}
	var j *models.Job
	if err == nil {
		j, err = h.jobs.Submit(c.Request.Context(), principal(c).User, spec)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		d := templates.JobNewData{Form: form}
		d.Field, d.Error = formError(form, fe)
		h.renderJobNew(c, http.StatusBadRequest, d, false)
	}) {
		return
	}
	h.jobSubmitted(c, j)
}

// jobSubmitted sends the browser to the page of a job just queued, which says where the
// job is as it goes.
func (h *Handler) jobSubmitted(c *gin.Context, j *models.Job) {
	c.Redirect(http.StatusSeeOther, "/jobs/"+strconv.FormatInt(j.ID, 10)+"?submitted=1")
}
