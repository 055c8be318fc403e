package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/templates"
)

// ImageCreate adds an image to the catalog from the admin form; bad input re-shows the form.
func (h *Handler) ImageCreate(c *gin.Context) {
	form := templates.ImageForm{
		Name: strings.TrimSpace(c.PostForm("name")), Reference: strings.TrimSpace(c.PostForm("reference")),
		Framework: c.PostForm("framework"), FrameworkVersion: strings.TrimSpace(c.PostForm("framework_version")),
		CUDAVersion: strings.TrimSpace(c.PostForm("cuda_version")), MinDriver: strings.TrimSpace(c.PostForm("min_driver")),
		PythonVersion: strings.TrimSpace(c.PostForm("python_version")), Description: strings.TrimSpace(c.PostForm("description")),
	}
	img, err := h.images.Add(c.Request.Context(), images.Input{
		Name: form.Name, Reference: form.Reference, Framework: form.Framework, FrameworkVersion: form.FrameworkVersion,
		CUDAVersion: form.CUDAVersion, MinDriver: form.MinDriver, PythonVersion: form.PythonVersion, Description: form.Description,
	})
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderImages(c, http.StatusBadRequest, templates.ImagesData{Form: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/images?notice="+url.QueryEscape("Added "+img.Name+" (uncertified)."))
}
