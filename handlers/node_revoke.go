package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

// NodeRevoke forgets a node's agent credential: its agent is refused from then on
// and must join again with a new join token.
func (h *Handler) NodeRevoke(c *gin.Context) {
	err := dispatch.RevokeNodeCredential(c.Request.Context(), h.store, h.audit, c.Param("name"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonError(c, http.StatusNotFound, "not_found", "there is no node "+c.Param("name"), "name")
	case err != nil:
		h.serverError(c, err)
	default:
		c.JSON(http.StatusOK, gin.H{"name": c.Param("name"), "credential": "revoked"})
	}
}
