package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// ImagesIndex shows the catalog with search, filters and the driver compatibility matrix;
// htmx requests get the same page, from which they select the results.
func (h *Handler) ImagesIndex(c *gin.Context) {
	d := templates.ImagesData{Notice: c.Query("notice")}
	h.renderImages(c, http.StatusOK, d)
}

func imageFilter(c *gin.Context) store.ImageFilter {
	return store.ImageFilter{
		Query:     strings.TrimSpace(c.Query("q")),
		Framework: c.Query("framework"),
		Status:    c.Query("status"),
	}
}

func (h *Handler) renderImages(c *gin.Context, status int, d templates.ImagesData) {
	f := imageFilter(c)
	m, err := h.images.CompatibilityMatrix(c.Request.Context(), f)
	var fe *models.FieldError
	if errors.As(err, &fe) {
		// The page with its filter marked, and no results for a search that cannot match.
		status, d.FilterError, d.FilterField, err = http.StatusBadRequest, fieldMessage(fe), fe.Field, nil
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	popular, err := h.images.Popular(c.Request.Context(), time.Now())
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Filter = templates.ImageFilter{Query: f.Query, Framework: f.Framework, Status: f.Status}
	d.Frameworks, d.Statuses = images.Frameworks, images.Statuses
	d.CanAdmin = permission(c).CanWrite(authz.Platform)
	if d.Form.Framework == "" {
		d.Form.Framework = "pytorch"
	}
	for _, n := range m.Nodes {
		d.Nodes = append(d.Nodes, n.Name)
	}
	for _, row := range m.Rows {
		img := row.Image
		r := templates.ImageRow{
			Name: img.Name, Reference: img.Reference, Framework: img.Framework, FrameworkVersion: img.FrameworkVersion,
			CUDAVersion: img.CUDAVersion, MinDriver: img.MinDriver, PythonVersion: img.PythonVersion, SizeMiB: img.SizeMiB,
			Status: img.Status, PrePull: img.PrePull, PopularJobs: popular[img.ID], Builtin: img.Builtin, Description: img.Description, PulledOn: row.PulledOn,
		}
		cr := templates.CompatRow{Image: img.Name}
		for _, cell := range row.Cells {
			if cell.Runs() {
				r.NodesRunning++
			}
			cr.Cells = append(cr.Cells, templates.CompatCell{Level: cell.Level, Reason: cell.Reason})
		}
		d.Images = append(d.Images, r)
		d.Matrix = append(d.Matrix, cr)
	}
	render(c, status, templates.Images(h.page(c, "Images", "images"), d))
}
