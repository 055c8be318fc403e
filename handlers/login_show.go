package handlers

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// loginTokenShape is a login form token as LoginShow makes it (crypto/rand.Text).
var loginTokenShape = regexp.MustCompile(`^[A-Z2-7]{26}$`)

// LoginShow renders the sign-in page; a browser already signed in goes on to where it was headed.
func (h *Handler) LoginShow(c *gin.Context) {
	next := safeNext(c.Query("next"))
	if principal(c) != nil {
		c.Redirect(http.StatusSeeOther, next)
		return
	}
	notice := ""
	if c.Query("signed_out") != "" {
		notice = "You are signed out."
	}
	h.renderLogin(c, http.StatusOK, templates.LoginData{Next: next, Notice: notice})
}

// renderLogin shows the sign-in form with a double-submit token: the same value in a
// cookie and in the form, which a page on another site cannot read or set.
func (h *Handler) renderLogin(c *gin.Context, status int, d templates.LoginData) {
	ctx := c.Request.Context()
	token, _ := c.Cookie(LoginCSRFCookie)
	if !loginTokenShape.MatchString(token) {
		token = rand.Text()
	}
	h.SetCookie(c, LoginCSRFCookie, token, 3600)
	local, err := h.identity.LocalLoginEnabled(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.CSRF, d.LocalLogin, d.SSO = token, local, h.identity.SSOEnabled()
	render(c, status, templates.Login(h.page(c, "Sign in", ""), d))
}

// safeNext keeps a post-login destination on this site: a local path, never another host.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) ||
		u.Scheme != "" || u.Host != "" || strings.HasPrefix(next, "/login") {
		return "/"
	}
	return next
}
