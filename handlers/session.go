package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// startSession signs the browser in as user, ending the session it came with, and sends it on to next.
func (h *Handler) startSession(c *gin.Context, user *models.User, next string) {
	previous, _ := c.Cookie(SessionCookie)
	cookie, sess, err := h.identity.StartSession(c.Request.Context(), user, previous, c.Request.UserAgent())
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.SetCookie(c, SessionCookie, cookie, int(sess.ExpiresAt.Sub(sess.CreatedAt).Seconds()))
	h.SetCookie(c, LoginCSRFCookie, "", -1)
	c.Redirect(http.StatusSeeOther, next)
}

// SessionDestroy signs the browser out; a single sign-on user also leaves the provider's
// session when it offers an end-session endpoint.
func (h *Handler) SessionDestroy(c *gin.Context) {
	p := principal(c)
	if p.Session == nil {
		jsonError(c, http.StatusBadRequest, "invalid", "An API token has no session to sign out of: revoke the token instead.", "")
		return
	}
	if err := h.identity.EndSession(c.Request.Context(), p); err != nil {
		h.serverError(c, err)
		return
	}
	h.SetCookie(c, SessionCookie, "", -1)
	if to := h.identity.EndSessionURL(c.Request.Context(), p.User); to != "" {
		c.Redirect(http.StatusSeeOther, to)
		return
	}
	c.Redirect(http.StatusSeeOther, "/login?signed_out=1")
}

func itoa(n int) string { return strconv.Itoa(n) }

// capitalize upper-cases the first letter of a service's message for a sentence on a page.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// Sentence is s capitalised and ended with a full stop where it has none.
func Sentence(s string) string {
	if s == "" {
		return s
	}
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") {
		return capitalize(s)
	}
	return capitalize(s) + "."
}
