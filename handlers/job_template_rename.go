package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// JobTemplateRename renames the template :name of the route's project to the form's
// name: who saved it may, and the project's team leads and admins.
func (h *Handler) JobTemplateRename(c *gin.Context) {
	p, name, newName := routeProject(c), c.Param("name"), c.PostForm("name")
	err := h.jobs.RenameTemplate(c.Request.Context(), principal(c).User, permission(c).CanManage(authz.Project), p, name, newName)
	if h.templateChangeFailed(c, err, name, newName) {
		return
	}
	backToTemplates(c, p, "Renamed template "+name+" to "+newName+".")
}

// templateChangeFailed answers a rename or delete that did not happen: a bad name shows
// the page again with it, a template of someone else is refused and audited.
func (h *Handler) templateChangeFailed(c *gin.Context, err error, name, newName string) bool {
	var ny *jobs.NotYoursError
	switch {
	case errors.As(err, &ny):
		h.deny(c, "Not your template", ny.Error()+".")
	case errors.Is(err, store.ErrNotFound):
		h.missingPage(c, "No such template", "Project "+routeProject(c).Name+" has no template called "+name+" (any more).", templates.Link{Href: "/projects/" + url.PathEscape(routeProject(c).Name) + "/templates", Text: "See the templates it has"})
	default:
		return h.failed(c, err, func(fe *models.FieldError) {
			d := templates.JobTemplatesData{Editing: name, NewName: newName, Field: fe.Field, Error: "New name for " + name + ": " + fe.Message + "."}
			h.renderJobTemplates(c, http.StatusBadRequest, d)
		})
	}
	return true
}

// backToTemplates sends the browser to the project's templates with a notice.
func backToTemplates(c *gin.Context, p *models.Project, notice string) {
	c.Redirect(http.StatusSeeOther, "/projects/"+url.PathEscape(p.Name)+"/templates?notice="+url.QueryEscape(notice))
}
