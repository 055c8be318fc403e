package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// JobRerunAPI submits job :id again as it was, as the portal's Re-run does: 201 with
// the new job, whose rerun_of names :id, or 400 naming what keeps it from running as
// it was (an image deprecated since, secret values that are its submitter's).
func (h *Handler) JobRerunAPI(c *gin.Context) {
	j := h.jobParam(c)
	if j == nil {
		return
	}
	ctx := c.Request.Context()
	again, err := h.jobs.Resubmit(ctx, principal(c).User, j)
	if h.failed(c, err, nil) {
		return
	}
	v, err := h.jobDetail(ctx, again)
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.JSON(http.StatusCreated, v)
}
