package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// maxJoinTokenTTL bounds how long a join token lives.
const maxJoinTokenTTL = 365 * 24 * time.Hour

// JoinTokenCreate mints a join token and shows it this once, with the command that
// starts an agent with it.
func (h *Handler) JoinTokenCreate(c *gin.Context) {
	ctx := c.Request.Context()
	form := templates.JoinTokenForm{Name: strings.TrimSpace(c.PostForm("name")), Pool: c.PostForm("pool"),
		Expires: strings.TrimSpace(c.PostForm("expires")), Reusable: c.PostForm("reusable") == "true"}
	spec := dispatch.JoinTokenSpec{Name: form.Name, Reusable: form.Reusable, CreatedByID: &principal(c).User.ID}
	ttl, err := time.ParseDuration(form.Expires)
	switch {
	case err != nil || ttl <= 0 || ttl > maxJoinTokenTTL:
		err = models.Invalid("expires", "%q is not a lifetime from 1s to 8760h: write it like 24h (a token past its expiry admits no node)", form.Expires)
	case form.Pool != "":
		p, perr := h.store.NodePoolByName(ctx, form.Pool)
		if errors.Is(perr, store.ErrNotFound) {
			err = models.Invalid("pool", "there is no pool %q", form.Pool)
		} else if perr != nil {
			err = perr
		} else {
			spec.PoolID = &p.ID
		}
	}
	spec.TTL = ttl
	var secret string
	if err == nil {
		secret, _, err = dispatch.CreateJoinToken(ctx, h.store, h.audit, time.Now(), spec)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderJoinTokens(c, http.StatusBadRequest, templates.JoinTokensData{Form: form, Error: fieldMessage(fe), Field: fe.Field})
	}) {
		return
	}
	// The secret is shown once: no cache may keep the page.
	c.Header("Cache-Control", "no-store")
	h.renderJoinTokens(c, http.StatusCreated, templates.JoinTokensData{Secret: secret, Created: form.Name,
		Command: "gantry agent --server " + serverURL(c) + " --join-token " + secret, Form: templates.JoinTokenForm{Expires: "24h"}})
}

// serverURL is how this request reached Gantry, for commands that agents run.
func serverURL(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}
