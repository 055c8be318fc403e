package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// JoinTokensIndex lists the join tokens and, for admins, the form to create one.
func (h *Handler) JoinTokensIndex(c *gin.Context) {
	h.renderJoinTokens(c, http.StatusOK, templates.JoinTokensData{Notice: c.Query("notice"), Form: templates.JoinTokenForm{Expires: "24h"}})
}

func (h *Handler) renderJoinTokens(c *gin.Context, status int, d templates.JoinTokensData) {
	ctx := c.Request.Context()
	tokens, err := h.store.JoinTokens(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	names := map[int64]string{}
	for _, p := range pools {
		names[p.ID] = p.Name
		d.Pools = append(d.Pools, p.Name)
	}
	now := time.Now()
	for _, t := range tokens {
		r := templates.JoinTokenRow{Name: t.Name, Reusable: t.Reusable, Expires: t.ExpiresAt.UTC().Format(time.DateTime), Status: "active"}
		if t.PoolID != nil {
			r.Pool = names[*t.PoolID]
		}
		if t.UsedAt != nil {
			r.Used = t.UsedAt.UTC().Format(time.DateTime)
		}
		switch {
		case t.RevokedAt != nil:
			r.Status = "revoked"
		case !now.Before(t.ExpiresAt):
			r.Status = "expired"
		case t.UsedAt != nil && !t.Reusable:
			r.Status = "used"
		}
		d.Tokens = append(d.Tokens, r)
	}
	d.CanAdmin = canAdmin(c)
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"join_token"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.JoinTokens(h.page(c, "Join tokens", "admin"), d))
}
