package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// JobsIndex shows the jobs list with its filters; an htmx request (a filter change)
// gets only the results and the filters' summary.
func (h *Handler) JobsIndex(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	ctx := c.Request.Context()
	q := jobsQuery(c)
	q.Brief = true
	d := templates.JobsData{
		Filter: templates.JobsFilter{State: c.Query("state"), Project: c.Query("project"), User: q.User, Image: q.Image,
			From: q.From, To: q.To, Sort: q.Sort},
		States: models.JobStates, Sorts: jobs.Sorts, Paged: q.Cursor != "", Me: user.Username,
	}
	if d.Filter.Sort == "" {
		d.Filter.Sort = jobs.DefaultSort
	}
	scope, names, err := h.jobScopeNamed(c, user)
	if err != nil {
		h.serverError(c, err)
		return
	}
	// A filter change replaces the results only: the form keeps its project names.
	// Every project's names come with the page's rows, in one round trip.
	fragment := c.GetHeader("HX-Request") == "true" && c.GetHeader("HX-History-Restore-Request") != "true"
	q.ProjectNames = !fragment && scope.All
	d.NoProjects = !scope.All && len(scope.ProjectIDs) == 0
	status := http.StatusOK
	page, err := h.jobs.List(ctx, scope, q)
	var fe *models.FieldError
	switch {
	case errors.As(err, &fe):
		status, d.Error, d.Field = http.StatusBadRequest, fieldMessage(fe), fe.Field
		// Nothing was read: the form shown again still offers every project.
		if q.ProjectNames {
			if page.ProjectNames, err = h.store.ProjectNames(ctx); err != nil {
				h.serverError(c, err)
				return
			}
		}
	case err != nil:
		h.serverError(c, err)
		return
	}
	if !fragment {
		d.Projects = names
		if scope.All {
			d.Projects = page.ProjectNames
		}
	}
	d.Jobs = page.Briefs
	d.Next = page.NextCursor
	// The fragment and the page live at one URL: caches must keep them apart.
	c.Header("Vary", "HX-Request")
	if fragment {
		render(c, status, templates.JobFilterResults(d))
		return
	}
	render(c, status, templates.Jobs(h.page(c, "Jobs", "jobs"), d))
}
