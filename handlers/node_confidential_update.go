package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// NodeConfidentialUpdate flags a node whose NVML cannot tell as running confidential
// computing, or not.
func (h *Handler) NodeConfidentialUpdate(c *gin.Context) {
	on, ok := h.boolField(c, "confidential")
	if !ok {
		return
	}
	n, err := h.dispatch.SetNodeConfidential(c.Request.Context(), c.Param("name"), on)
	if h.nodeActionFailed(c, err, func(fe *models.FieldError) {
		h.renderNodeAdmin(c, http.StatusBadRequest, templates.NodeAdminData{Error: fieldMessage(fe), Field: fe.Field}, nil)
	}) {
		return
	}
	msg := "Node " + n.Name + " is flagged as not running confidential computing."
	if on {
		msg = "Node " + n.Name + " is flagged as running confidential computing: confidential-only projects may use it."
	}
	redirectNotice(c, "/admin/nodes/"+n.Name, msg)
}
