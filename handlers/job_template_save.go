package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// JobTemplateSave saves the submit form as a template of its project and opens the
// form filled from it; a bad name or form is shown again with the field at fault, and
// nothing is stored. Nothing is submitted.
func (h *Handler) JobTemplateSave(c *gin.Context) {
	form := jobFormOf(c.Request.PostForm)
	name := c.PostForm("template_name")
	var spec jobs.Spec
	err := cutField(c)
	if err == nil {
		spec, err = specOfForm(form)
	}
	var t *jobs.Template
	if err == nil {
		t, err = h.jobs.SaveTemplate(c.Request.Context(), principal(c).User, routeProject(c), name, spec)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		d := templates.JobNewData{Form: form, TemplateName: name}
		d.Field, d.Error = templateFormError(form, fe)
		h.renderJobNew(c, http.StatusBadRequest, d, false)
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/jobs/new?saved=1&project="+url.QueryEscape(t.Project)+"&template="+url.QueryEscape(t.Name))
}

// templateFormError is the submit form's field and message for an error of saving a
// template: the template's name, or a field of the job.
func templateFormError(f templates.JobForm, fe *models.FieldError) (field, message string) {
	if fe.Field == "name" {
		return "template_name", "Template name: " + fe.Message + "."
	}
	return formError(f, &models.FieldError{Field: strings.TrimPrefix(fe.Field, "spec."), Message: fe.Message})
}
