package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/images"
)

// imageRequest is the body of POST /api/v1/images: a new catalog entry.
type imageRequest struct {
	Name             string `json:"name"`
	Reference        string `json:"reference"`
	Digest           string `json:"digest"`
	Framework        string `json:"framework"`
	FrameworkVersion string `json:"framework_version"`
	CUDAVersion      string `json:"cuda_version"`
	MinDriver        string `json:"min_driver"`
	PythonVersion    string `json:"python_version"`
	SizeMiB          int64  `json:"size_mib"`
	PrePull          bool   `json:"pre_pull"`
	Description      string `json:"description"`
}

// ImageCreateAPI adds an image to the catalog, uncertified, as the images page's form
// does: a pipeline that builds images registers each, and an admin certifies it.
func (h *Handler) ImageCreateAPI(c *gin.Context) {
	var req imageRequest
	if h.failed(c, readJSON(c, &req, `{"name": "pytorch-2.5-cuda12.4", "reference": "nvcr.io/nvidia/pytorch:24.10-py3", "framework": "pytorch", …}`), nil) {
		return
	}
	img, err := h.images.Add(c.Request.Context(), images.Input{
		Name: req.Name, Reference: req.Reference, Digest: req.Digest, Framework: req.Framework, FrameworkVersion: req.FrameworkVersion,
		CUDAVersion: req.CUDAVersion, MinDriver: req.MinDriver, PythonVersion: req.PythonVersion, SizeMiB: req.SizeMiB,
		PrePull: req.PrePull, Description: req.Description,
	})
	if h.failed(c, err, nil) {
		return
	}
	c.JSON(http.StatusCreated, imageJSON(img))
}
