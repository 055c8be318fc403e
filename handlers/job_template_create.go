package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/jobs"
)

// JobTemplateCreate saves the body's spec as a template of the route's project: 201
// with the template, or 400 naming the field (a taken name, a spec that would not
// submit). Nothing is submitted.
func (h *Handler) JobTemplateCreate(c *gin.Context) {
	name, spec, err := jobs.ParseTemplate(c.Request.Body)
	var t *jobs.Template
	if err == nil {
		t, err = h.jobs.SaveTemplate(c.Request.Context(), principal(c).User, routeProject(c), name, spec)
	}
	if h.failed(c, err, nil) {
		return
	}
	c.JSON(http.StatusCreated, templateViewOf(t))
}
