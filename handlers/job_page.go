package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// jobPageParam loads the job (the one the gate loaded, where it did) named by the :id path parameter of a page, or answers
// with an error page.
func (h *Handler) jobPageParam(c *gin.Context) *models.Job {
	if j := routeJob(c); j != nil {
		return j
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.errorPage(c, http.StatusBadRequest, "No such job", "A job is named by its number, e.g. /jobs/12.")
		return nil
	}
	j, err := h.jobs.Job(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such job", "There is no job "+c.Param("id")+".", templates.Link{Href: "/jobs", Text: "Find yours on the jobs list"})
		return nil
	}
	if err != nil {
		h.serverError(c, err)
		return nil
	}
	return j
}
