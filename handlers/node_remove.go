package handlers

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// NodeRemove takes a node out of service for good, after confirmation.
func (h *Handler) NodeRemove(c *gin.Context) {
	name := c.Param("name")
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Remove node " + name + "?",
		Message: name + " goes down and its agent's credential is revoked: the machine comes back only by joining again with a new join token. A machine an autoscaled pool created is deleted. This is refused while jobs run there; drain it first. Its history stays.",
		Button:  "Remove " + name, Back: backTo(c, "/admin/nodes"),
	}, "back") {
		return
	}
	n, err := h.dispatch.RemoveNode(c.Request.Context(), name, "removed by "+principal(c).User.Username)
	if h.nodeActionFailed(c, err, nil) {
		return
	}
	redirectNotice(c, backTo(c, "/admin/nodes"), "Removed node "+n.Name+": its agent is refused from now on.")
}
