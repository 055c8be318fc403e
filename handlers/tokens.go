package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// TokensIndex lists the signed-in user's API tokens with a form for a new one.
func (h *Handler) TokensIndex(c *gin.Context) {
	h.renderTokens(c, http.StatusOK, templates.TokensData{Form: templates.TokenForm{Scope: "read", Days: "90"}})
}

// TokenCreate makes a token and shows its secret once.
func (h *Handler) TokenCreate(c *gin.Context) {
	form := templates.TokenForm{Name: c.PostForm("name"), Scope: c.PostForm("scope"), Days: strings.TrimSpace(c.PostForm("days"))}
	d := templates.TokensData{Form: form}
	days, err := strconv.Atoi(form.Days)
	if err != nil {
		d.Error, d.Field = "Expires after: give a number of days from 1 to 365.", "expires"
		h.renderTokens(c, http.StatusBadRequest, d)
		return
	}
	secret, tok, err := h.identity.CreateToken(c.Request.Context(), principal(c).User, form.Name, form.Scope, time.Duration(days)*24*time.Hour)
	if h.failed(c, err, func(fe *models.FieldError) {
		d.Error, d.Field = fieldMessage(fe), fe.Field
		h.renderTokens(c, http.StatusBadRequest, d)
	}) {
		return
	}
	d.Secret, d.Created, d.Form = secret, tok.Name, templates.TokenForm{Scope: "read", Days: "90"}
	c.Header("Cache-Control", "no-store")
	h.renderTokens(c, http.StatusCreated, d)
}

// TokenRevoke revokes one of the signed-in user's tokens.
func (h *Handler) TokenRevoke(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.errorPage(c, http.StatusBadRequest, "Bad token id", "A token id is a positive number.")
		return
	}
	err = h.identity.RevokeToken(c.Request.Context(), principal(c).User, id)
	notFound := func() {
		h.missingPage(c, "No such token", "You have no token "+c.Param("id")+".", templates.Link{Href: "/tokens", Text: "Your API tokens page lists yours"})
	}
	switch {
	case errors.Is(err, identity.ErrNotYours):
		h.conceal(c, "API token "+c.Param("id")+" belongs to another user", notFound)
		return
	case errors.Is(err, store.ErrNotFound):
		notFound()
		return
	case errors.Is(err, store.ErrStale):
		h.errorPage(c, http.StatusConflict, "Already revoked", "That token was revoked already.")
		return
	case err != nil:
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/tokens")
}

func (h *Handler) renderTokens(c *gin.Context, status int, d templates.TokensData) {
	tokens, err := h.identity.Tokens(c.Request.Context(), principal(c).User)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, t := range tokens {
		row := templates.TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scope: t.Scope, Expires: "never", LastUsed: "never", Status: t.Status}
		if t.ExpiresAt != nil {
			row.Expires = t.ExpiresAt.UTC().Format(time.DateOnly)
		}
		if t.LastUsedAt != nil {
			row.LastUsed = t.LastUsedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		d.Tokens = append(d.Tokens, row)
	}
	render(c, status, templates.Tokens(h.page(c, "API tokens", "tokens"), d))
}
