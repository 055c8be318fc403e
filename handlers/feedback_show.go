package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// FeedbackShow shows one item with its answer and comments; admins get the answer form.
func (h *Handler) FeedbackShow(c *gin.Context) {
	h.renderFeedbackItem(c, http.StatusOK, c.Query("notice"), "")
}

// feedbackItem reads the item named by :id, answering 404 when there is none.
func (h *Handler) feedbackItem(c *gin.Context) *models.FeedbackItem {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err == nil && id > 0 {
		it, err := h.store.FeedbackItemByID(c.Request.Context(), id)
		if err == nil {
			return it
		}
		if !errors.Is(err, store.ErrNotFound) {
			h.serverError(c, err)
			return nil
		}
	}
	h.missingPage(c, "No such feedback", "There is no feedback item "+c.Param("id")+".", templates.Link{Href: "/feedback", Text: "See the board for the open ones"})
	return nil
}

func (h *Handler) renderFeedbackItem(c *gin.Context, status int, notice, formError string) {
	it := h.feedbackItem(c)
	if it == nil {
		return
	}
	ctx := c.Request.Context()
	me := principal(c).User.ID
	rows, err := h.feedbackRows(c, []models.FeedbackItem{*it}, me)
	if err != nil {
		h.serverError(c, err)
		return
	}
	comments, err := h.store.FeedbackComments(ctx, it.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	ids := []int64{}
	for _, cm := range comments {
		ids = append(ids, cm.UserID)
	}
	if it.AnsweredByID != nil {
		ids = append(ids, *it.AnsweredByID)
	}
	names, err := h.store.UsernamesByID(ctx, ids)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d := templates.FeedbackItemData{
		Item: rows[0], Body: it.Body, Page: it.Page, Answer: it.Answer, Notice: notice, Error: formError,
		IsAdmin: permission(c).CanWrite(authz.Platform), Statuses: feedback.Statuses,
	}
	if it.JobID != nil {
		d.Job = *it.JobID
	}
	if it.AnsweredByID != nil && it.AnsweredAt != nil {
		d.AnsweredBy, d.AnsweredAt = names[*it.AnsweredByID], it.AnsweredAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	for _, cm := range comments {
		d.Comments = append(d.Comments, templates.FeedbackComment{Author: names[cm.UserID], Body: cm.Body, Created: cm.CreatedAt.UTC().Format(time.DateOnly)})
	}
	render(c, status, templates.FeedbackItem(h.page(c, it.Title, "feedback"), d))
}
