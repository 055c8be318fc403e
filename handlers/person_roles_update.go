package handlers

import (
	"github.com/gin-gonic/gin"
)

// PersonRolesUpdate makes a person an admin and an auditor, or not (audited).
func (h *Handler) PersonRolesUpdate(c *gin.Context) {
	admin, auditor := c.PostForm("admin") == "true", c.PostForm("auditor") == "true"
	u, err := h.dir.SetGlobalRoles(c.Request.Context(), principal(c).User, c.Param("user"), admin, auditor)
	if h.adminFailed(c, err, nil) {
		return
	}
	msg := u.Username + " holds no global role."
	switch {
	case u.IsAdmin && u.IsAuditor:
		msg = u.Username + " is an admin and an auditor."
	case u.IsAdmin:
		msg = u.Username + " is an admin."
	case u.IsAuditor:
		msg = u.Username + " is an auditor."
	}
	redirectNotice(c, backTo(c, "/admin/people"), msg)
}
