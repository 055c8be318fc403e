package handlers

import (
	"fmt"
	"net/http"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/jobs"
)

// jobsQuery reads the jobs list's filters, sort and cursor from the query string.
func jobsQuery(c *gin.Context) jobs.ListQuery {
	return jobs.ListQuery{
		States: c.QueryArray("state"), Projects: c.QueryArray("project"), User: c.Query("user"), Image: c.Query("image"),
		From: c.Query("from"), To: c.Query("to"), Sort: c.Query("sort"), Cursor: c.Query("cursor"), Limit: c.Query("limit"),
	}
}

// JobsAPIIndex lists the jobs the caller may read, one page at a time: filters
// state, project, user, image, from, to; sort; limit; cursor (next_cursor of the
// page before, null on the last page).
func (h *Handler) JobsAPIIndex(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	scope, err := h.jobScope(c, user)
	if err != nil {
		h.serverError(c, err)
		return
	}
	page, err := h.jobs.List(c.Request.Context(), scope, jobsQuery(c))
	if h.failed(c, err, nil) {
		return
	}
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	b := append(buf.AvailableBuffer(), `{"jobs":[`...)
	for i := range page.Jobs {
		j := &page.Jobs[i]
		if i > 0 {
			b = append(b, ',')
		}
		v := jobView(&j.Job, j.ProjectName, j.Username)
		if b, err = appendJobJSON(b, &v); err != nil {
			h.serverError(c, fmt.Errorf("encode job %d: %w", j.ID, err))
			return
		}
	}
	b = append(b, `],"next_cursor":`...)
	if page.NextCursor == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, page.NextCursor)
	}
	// Kept in the buffer, which goes back to the pool grown to a page's size.
	buf.Write(append(b, '}'))
	writeJSON(c, http.StatusOK, buf.Bytes())
}
