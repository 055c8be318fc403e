package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/templates"
)

// ProjectMemberSave grants a person a role in the project, or changes the role they
// have; the grant goes through authz and is audited.
func (h *Handler) ProjectMemberSave(c *gin.Context) {
	form := templates.MemberForm{Username: strings.TrimSpace(c.PostForm("username")), Role: c.PostForm("role")}
	u, p, err := h.dir.SetProjectRole(c.Request.Context(), c.Param("project"), form.Username, form.Role)
	var nf *directory.NotFoundError
	if errors.As(err, &nf) && nf.Kind == "user" {
		h.renderProjectAdmin(c, http.StatusBadRequest, templates.ProjectAdminData{Form: form, Field: "user",
			Error: "User: " + nf.Error() + ". People appear once they signed in, or an admin created them."})
		return
	}
	if h.adminFailed(c, err, func(fe *models.FieldError) {
		h.renderProjectAdmin(c, http.StatusBadRequest, templates.ProjectAdminData{Form: form, Field: fe.Field, Error: fieldMessage(fe)})
	}) {
		return
	}
	redirectNotice(c, "/admin/projects/"+p.Name, u.Username+" is now "+form.Role+" in "+p.Name+".")
}
