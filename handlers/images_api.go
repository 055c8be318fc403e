package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// apiImage is an image of the catalog in the JSON API.
type apiImage struct {
	Name             string `json:"name"`
	Reference        string `json:"reference"`
	Digest           string `json:"digest,omitempty"`
	Framework        string `json:"framework"`
	FrameworkVersion string `json:"framework_version,omitempty"`
	CUDAVersion      string `json:"cuda_version,omitempty"`
	MinDriver        string `json:"min_driver,omitempty"`
	PythonVersion    string `json:"python_version,omitempty"`
	SizeMiB          int64  `json:"size_mib"`
	Status           string `json:"status"`
	PrePull          bool   `json:"pre_pull"`
	Description      string `json:"description,omitempty"`
}

// ImagesAPIIndex lists the catalog as JSON, with the page's search parameters.
func (h *Handler) ImagesAPIIndex(c *gin.Context) {
	imgs, err := h.images.Catalog(c.Request.Context(), imageFilter(c))
	if h.failed(c, err, nil) {
		return
	}
	out := make([]apiImage, 0, len(imgs))
	for i := range imgs {
		out = append(out, imageJSON(&imgs[i]))
	}
	c.JSON(http.StatusOK, gin.H{"images": out})
}

// imageJSON is i as the API writes it.
func imageJSON(i *models.Image) apiImage {
	return apiImage{
		Name: i.Name, Reference: i.Reference, Digest: i.Digest, Framework: i.Framework, FrameworkVersion: i.FrameworkVersion,
		CUDAVersion: i.CUDAVersion, MinDriver: i.MinDriver, PythonVersion: i.PythonVersion, SizeMiB: i.SizeMiB,
		Status: i.Status, PrePull: i.PrePull, Description: i.Description,
	}
}
