package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// NodePoolUpdate moves a node into a pool, or out of any.
func (h *Handler) NodePoolUpdate(c *gin.Context) {
	n, err := h.dispatch.SetNodePool(c.Request.Context(), c.Param("name"), c.PostForm("pool"))
	if h.nodeActionFailed(c, err, func(fe *models.FieldError) {
		h.renderNodeAdmin(c, http.StatusBadRequest, templates.NodeAdminData{Error: fieldMessage(fe), Field: fe.Field}, nil)
	}) {
		return
	}
	msg := "Node " + n.Name + " is in no pool."
	if p := c.PostForm("pool"); p != "" {
		msg = "Node " + n.Name + " is in pool " + p + "."
	}
	redirectNotice(c, "/admin/nodes/"+n.Name, msg)
}
