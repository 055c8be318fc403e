package handlers

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/templates"
)

// LoginCreate checks a username and password (the gate checked the form's CSRF token),
// starts a new session and goes on to where the browser was headed.
func (h *Handler) LoginCreate(c *gin.Context) {
	ctx := c.Request.Context()
	username := strings.TrimSpace(c.PostForm("username"))
	password := c.PostForm("password")
	d := templates.LoginData{Next: safeNext(c.PostForm("next")), Username: username}
	// Characters, as the form's maxlength counts them, not bytes.
	switch {
	case username == "" || password == "":
		d.Error = "Enter your username and your password."
	case utf8.RuneCountInString(username) > 64:
		d.Error = "A username has at most 64 characters."
	case utf8.RuneCountInString(password) > 128:
		d.Error = "A password has at most 128 characters."
	}
	if d.Error != "" {
		h.renderLogin(c, http.StatusBadRequest, d)
		return
	}
	user, err := h.identity.LoginLocal(ctx, username, password)
	var rl *identity.RateLimitError
	switch {
	case errors.Is(err, identity.ErrBadCredentials):
		d.Error = "Wrong username or password."
		h.renderLogin(c, http.StatusUnauthorized, d)
		return
	case errors.As(err, &rl):
		c.Header("Retry-After", itoa(int(rl.RetryAfter.Seconds())+1))
		d.Error = capitalize(rl.Error()) + "."
		h.renderLogin(c, http.StatusTooManyRequests, d)
		return
	case errors.Is(err, identity.ErrDisabled), errors.Is(err, identity.ErrLocalLoginOff):
		d.Error = capitalize(err.Error()) + "."
		h.renderLogin(c, http.StatusForbidden, d)
		return
	case err != nil:
		h.serverError(c, err)
		return
	}
	h.startSession(c, user, d.Next)
}
