package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// ImageStatusAPI certifies, un-certifies or deprecates an image:
// {"status": "certified|uncertified|deprecated"}.
func (h *Handler) ImageStatusAPI(c *gin.Context) {
	var req struct {
		Status string `json:"status"`
	}
	if h.failed(c, readJSON(c, &req, `{"status": "certified|uncertified|deprecated"}`), nil) {
		return
	}
	img, err := h.images.SetStatus(c.Request.Context(), c.Param("name"), req.Status)
	if h.failed(c, err, func(fe *models.FieldError) {
		status, code := http.StatusBadRequest, "invalid"
		if fe.Field == "image" {
			status, code = http.StatusNotFound, "not_found"
		}
		jsonError(c, status, code, fe.Message, fe.Field)
	}) {
		return
	}
	c.JSON(http.StatusOK, imageJSON(img))
}
