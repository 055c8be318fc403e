package handlers

import (
	"errors"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// JoinTokenRevoke revokes the join tokens of a name, after confirmation. Nodes that
// joined with them keep their own credentials.
func (h *Handler) JoinTokenRevoke(c *gin.Context) {
	name := c.PostForm("name")
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Revoke join token " + name + "?",
		Message: "No node can join with it any more. Nodes that already joined with it keep working: they have their own credentials.",
		Button:  "Revoke", Back: "/admin/join-tokens",
	}, "name") {
		return
	}
	err := dispatch.RevokeJoinToken(c.Request.Context(), h.store, h.audit, time.Now(), name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.missingPage(c, "No such join token", "There is no join token "+name+" that is not revoked yet.", templates.Link{Href: "/admin/join-tokens", Text: "The join tokens page lists the live ones"})
	case err != nil:
		h.serverError(c, err)
	default:
		redirectNotice(c, "/admin/join-tokens", "Revoked join token "+name+".")
	}
}
