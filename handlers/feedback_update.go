package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// FeedbackVote adds or withdraws the caller's vote and goes back where they voted from.
func (h *Handler) FeedbackVote(c *gin.Context) {
	it := h.feedbackItem(c)
	if it == nil {
		return
	}
	var err error
	switch c.PostForm("vote") {
	case "true":
		err = h.feedback.Vote(c.Request.Context(), it.ID, principal(c).User.ID)
	case "false":
		err = h.feedback.Unvote(c.Request.Context(), it.ID, principal(c).User.ID)
	default:
		h.errorPage(c, http.StatusBadRequest, "Bad request", "vote must be true or false.")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	back := "/feedback/" + strconv.FormatInt(it.ID, 10)
	if ref := c.Request.Referer(); ref != "" {
		if u, err := url.Parse(ref); err == nil && u.Path == "/feedback" {
			back = u.RequestURI() // the board's page and filter the vote was cast on
		}
	}
	c.Redirect(http.StatusSeeOther, back)
}

// FeedbackCommentCreate adds the caller's comment to an item.
func (h *Handler) FeedbackCommentCreate(c *gin.Context) {
	it := h.feedbackItem(c)
	if it == nil {
		return
	}
	_, err := h.feedback.Comment(c.Request.Context(), it.ID, principal(c).User.ID, c.PostForm("body"))
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderFeedbackItem(c, http.StatusBadRequest, "", "Comment: "+fe.Message+".")
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/feedback/"+strconv.FormatInt(it.ID, 10))
}

// FeedbackAnswer sets an item's status and public answer; the author is notified.
func (h *Handler) FeedbackAnswer(c *gin.Context) {
	it := h.feedbackItem(c)
	if it == nil {
		return
	}
	_, err := h.feedback.Answer(c.Request.Context(), it.ID, principal(c).User.ID, c.PostForm("status"), c.PostForm("answer"))
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderFeedbackItem(c, http.StatusBadRequest, "", fieldMessage(fe))
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/feedback/"+strconv.FormatInt(it.ID, 10)+"?notice="+url.QueryEscape("Answer saved; the author has been notified."))
}

// FeedbackExport downloads every item as CSV.
func (h *Handler) FeedbackExport(c *gin.Context) {
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="gantry-feedback.csv"`)
	if err := h.feedback.ExportCSV(c.Request.Context(), c.Writer, store.FeedbackFilter{Limit: 1_000_000}); err != nil {
		h.log.Error("feedback export failed midway", "err", err)
	}
}
