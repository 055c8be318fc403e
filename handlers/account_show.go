package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// AccountShow shows the signed-in person's own settings.
func (h *Handler) AccountShow(c *gin.Context) {
	h.renderAccount(c, http.StatusOK, templates.AccountData{Notice: c.Query("notice")})
}

// renderAccount shows the settings as stored, with d's notice or error.
func (h *Handler) renderAccount(c *gin.Context, status int, d templates.AccountData) {
	me := principal(c).User
	on, err := h.feedback.EmailsOn(c.Request.Context(), me.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Email, d.FeedbackEmails = me.Email, on
	render(c, status, templates.Account(h.page(c, "Your account", "account"), d))
}
