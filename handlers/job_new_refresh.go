package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// JobNewRefresh is the submit form again for the form's live requests, as htmx posts them
// while fields change (a POST, so that nothing typed goes in a URL): the form's fields
// but the environment ones, from which htmx takes the preview, or the whole form.
// apply=preset fills in the chosen profile, apply=recommendation the profile history
// recommends. It changes nothing.
func (h *Handler) JobNewRefresh(c *gin.Context) {
	f := c.Request.PostForm
	d := templates.JobNewData{Form: jobFormOf(f), TemplateName: f.Get("template_name")}
	if f.Get("apply") == "preset" {
		applyPreset(&d.Form)
	}
	h.renderJobNew(c, http.StatusOK, d, f.Get("apply") == "recommendation")
}
