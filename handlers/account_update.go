package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// AccountUpdate saves the signed-in person's own settings: the route names no user, so
// nobody changes another's. A ticked box sends feedback_emails=true; an unticked one
// sends nothing.
func (h *Handler) AccountUpdate(c *gin.Context) {
	var on bool
	switch c.PostForm("feedback_emails") {
	case "true":
		on = true
	case "":
	default:
		h.renderAccount(c, http.StatusBadRequest, templates.AccountData{
			Error: "E-mail me about my feedback (feedback_emails): must be true, or left out for off. Nothing was changed."})
		return
	}
	if err := h.feedback.SetEmails(c.Request.Context(), principal(c).User.ID, on); err != nil {
		h.serverError(c, err)
		return
	}
	notice := "Saved: you get no e-mails about your feedback; you still see them on your home page."
	if on {
		notice = "Saved: you get e-mails about your feedback."
	}
	redirectNotice(c, "/account", notice)
}
