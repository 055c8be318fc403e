package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// templateView is a job template as the API answers it.
type templateView struct {
	Name      string    `json:"name"`
	Project   string    `json:"project"`
	Spec      jobs.Spec `json:"spec"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

func templateViewOf(t *jobs.Template) templateView {
	return templateView{Name: t.Name, Project: t.Project, Spec: t.Spec, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt.UTC()}
}

// JobTemplatesAPIIndex answers the job templates of the route's project, by name.
func (h *Handler) JobTemplatesAPIIndex(c *gin.Context) {
	p := routeProject(c)
	list, err := h.jobs.Templates(c.Request.Context(), p)
	if err != nil {
		h.serverError(c, err)
		return
	}
	out := make([]templateView, len(list))
	for i := range list {
		out[i] = templateViewOf(&list[i])
	}
	c.JSON(http.StatusOK, gin.H{"project": p.Name, "templates": out})
}

// JobTemplateAPIShow answers the template :name of the route's project.
func (h *Handler) JobTemplateAPIShow(c *gin.Context) {
	p := routeProject(c)
	t, err := h.jobs.TemplateByName(c.Request.Context(), p, c.Param("name"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonError(c, http.StatusNotFound, "not_found", "project "+p.Name+" has no template called "+c.Param("name"), "name")
	case err != nil:
		h.serverError(c, err)
	default:
		c.JSON(http.StatusOK, templateViewOf(t))
	}
}
