package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/templates"
)

// FeedbackCreate files a new item; bad input re-shows the board with the message.
func (h *Handler) FeedbackCreate(c *gin.Context) {
	form := templates.FeedbackForm{Category: c.PostForm("category"), Title: c.PostForm("title"), Body: c.PostForm("body"), Page: c.PostForm("page")}
	in := feedback.Input{Category: form.Category, Title: form.Title, Body: form.Body, Page: form.Page}
	if j := c.PostForm("job_id"); j != "" {
		id, err := strconv.ParseInt(j, 10, 64)
		if err != nil || id <= 0 {
			h.renderFeedbackBoard(c, http.StatusBadRequest, templates.FeedbackBoardData{Form: form, Error: "Job: give the number of the job this is about.", Field: "job_id"})
			return
		}
		in.JobID, form.Job = &id, id
	}
	it, err := h.feedback.Submit(c.Request.Context(), principal(c).User.ID, in)
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderFeedbackBoard(c, http.StatusBadRequest, templates.FeedbackBoardData{Form: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/feedback/"+strconv.FormatInt(it.ID, 10)+"?notice="+url.QueryEscape("Thank you: the platform team sees your feedback now."))
}
