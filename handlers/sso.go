package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/templates"
)

// ssoFlowSeconds is how long the flow cookie lives: as long as a sign-in may take.
const ssoFlowSeconds = 600

// SSOBegin sends the browser to the single sign-on provider, with PKCE, state and nonce
// kept in a signed cookie for the callback.
func (h *Handler) SSOBegin(c *gin.Context) {
	if !h.identity.SSOEnabled() {
		h.missingPage(c, "Single sign-on is off", "This Gantry has no single sign-on provider configured.", templates.Link{Href: "/login", Text: "Sign in with a username and password"})
		return
	}
	to, cookie, err := h.identity.BeginSSO(c.Request.Context(), safeNext(c.Query("next")))
	if errors.Is(err, identity.ErrSSO) {
		h.errorPage(c, http.StatusBadGateway, "Single sign-on is unavailable", capitalize(err.Error())+". Try again in a moment, or tell the platform team.")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.SetCookie(c, OIDCCookie, cookie, ssoFlowSeconds)
	c.Redirect(http.StatusFound, to)
}

// SSOCallback completes a single sign-on: the provider sends the browser here with a code.
func (h *Handler) SSOCallback(c *gin.Context) {
	if !h.identity.SSOEnabled() {
		h.missingPage(c, "Single sign-on is off", "This Gantry has no single sign-on provider configured.", templates.Link{Href: "/login", Text: "Sign in with a username and password"})
		return
	}
	cookie, _ := c.Cookie(OIDCCookie)
	h.SetCookie(c, OIDCCookie, "", -1)
	user, next, err := h.identity.FinishSSO(c.Request.Context(), identity.Callback{
		Cookie: cookie, State: c.Query("state"), Code: c.Query("code"),
		Error: c.Query("error"), ErrorDescription: c.Query("error_description"),
	})
	switch {
	case errors.Is(err, identity.ErrDisabled):
		h.errorPage(c, http.StatusForbidden, "Account disabled", "Your Gantry account is disabled. Ask a Gantry admin.")
		return
	case errors.Is(err, identity.ErrSSO):
		h.errorPage(c, http.StatusUnauthorized, "Sign-in failed", capitalize(err.Error())+". Sign in again from the login page.")
		return
	case err != nil:
		h.serverError(c, err)
		return
	}
	h.startSession(c, user, next)
}
