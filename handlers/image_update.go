package handlers

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// ImageStatusUpdate certifies, un-certifies or deprecates an image.
func (h *Handler) ImageStatusUpdate(c *gin.Context) {
	img, err := h.images.SetStatus(c.Request.Context(), c.Param("name"), c.PostForm("status"))
	if h.imageUpdateFailed(c, err) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/images?notice="+url.QueryEscape(img.Name+" is now "+img.Status+"."))
}

// ImagePrePullUpdate marks an image for agents to pull ahead of need, or unmarks it.
func (h *Handler) ImagePrePullUpdate(c *gin.Context) {
	var on bool
	switch c.PostForm("prepull") {
	case "true":
		on = true
	case "false":
	default:
		h.errorPage(c, http.StatusBadRequest, "Bad request", "prepull must be true or false.")
		return
	}
	img, err := h.images.SetPrePull(c.Request.Context(), c.Param("name"), on)
	if h.imageUpdateFailed(c, err) {
		return
	}
	msg := "Agents will pre-pull " + img.Name + "."
	if !on {
		msg = "Agents no longer pre-pull " + img.Name + "."
	}
	c.Redirect(http.StatusSeeOther, "/images?notice="+url.QueryEscape(msg))
}

func (h *Handler) imageUpdateFailed(c *gin.Context, err error) bool {
	return h.failed(c, err, func(fe *models.FieldError) {
		if fe.Field == "image" {
			h.missingPage(c, "No such image", capitalize(fe.Message)+".", templates.Link{Href: "/images", Text: "The images page lists them all"})
			return
		}
		h.errorPage(c, http.StatusBadRequest, "Bad request", fieldMessage(fe))
	})
}
