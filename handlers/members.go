package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

type memberView struct {
	Username    string `json:"username"`
	DisplayName string `json:"display_name"`
	Role        string `json:"role"`
}

// MembersIndex answers the members of the route's project and their roles.
func (h *Handler) MembersIndex(c *gin.Context) {
	members, err := h.store.MembersOfProject(c.Request.Context(), routeProject(c).ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	out := make([]memberView, len(members))
	for i, m := range members {
		out[i] = memberView{Username: m.Username, DisplayName: m.DisplayName, Role: m.Role}
	}
	c.JSON(http.StatusOK, gin.H{"project": routeProject(c).Name, "members": out})
}

// MemberUpdate gives the user of :user the role of the body ({"role": "member"}) in the
// route's project; the change is audited.
func (h *Handler) MemberUpdate(c *gin.Context) {
	u := h.memberParam(c)
	if u == nil {
		return
	}
	var body struct {
		Role string `json:"role"`
	}
	if h.failed(c, readJSON(c, &body, `{"role": "member"}`), nil) {
		return
	}
	if h.failed(c, h.authz.SetProjectRole(c.Request.Context(), u, routeProject(c), body.Role), nil) {
		return
	}
	c.JSON(http.StatusOK, memberView{Username: u.Username, DisplayName: u.DisplayName, Role: body.Role})
}

// MemberDestroy removes the user of :user from the route's project; the change is audited.
func (h *Handler) MemberDestroy(c *gin.Context) {
	u := h.memberParam(c)
	if u == nil {
		return
	}
	err := h.authz.RemoveFromProject(c.Request.Context(), u, routeProject(c))
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonError(c, http.StatusNotFound, "not_found", u.Username+" is not a member of "+routeProject(c).Name, "user")
	case err != nil:
		h.serverError(c, err)
	default:
		c.Status(http.StatusNoContent)
	}
}

// memberParam loads the user named by :user, or answers 404.
func (h *Handler) memberParam(c *gin.Context) *models.User {
	u, err := h.store.UserByUsername(c.Request.Context(), c.Param("user"))
	if errors.Is(err, store.ErrNotFound) {
		jsonError(c, http.StatusNotFound, "not_found", "there is no user "+c.Param("user"), "user")
		return nil
	}
	if err != nil {
		h.serverError(c, err)
		return nil
	}
	return u
}
