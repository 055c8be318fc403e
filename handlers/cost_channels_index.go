package handlers

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/templates"
)

// CostChannelsIndex lists the notification channels, webhook URLs cut to their host
// (they often carry a secret), with the admin's form to add one.
func (h *Handler) CostChannelsIndex(c *gin.Context) {
	h.renderChannels(c, http.StatusOK, templates.CostChannelsData{Flash: templates.CostAdminFlash{Notice: c.Query("notice")},
		Form: templates.ChannelForm{Kind: governance.ChannelWebhook, Enabled: true}})
}

func (h *Handler) renderChannels(c *gin.Context, status int, d templates.CostChannelsData) {
	channels, err := h.gov.Channels(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, ch := range channels {
		d.Rows = append(d.Rows, templates.ChannelRow{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Target: shownTarget(ch.Kind, ch.Target), Enabled: ch.Enabled})
	}
	d.Mailer = h.gov.CanSend(governance.ChannelEmail)
	d.CanEdit = permission(c).CanWrite(authz.Platform)
	render(c, status, templates.CostChannels(h.page(c, "Channels", "cost"), d))
}

// shownTarget is a channel's target without what may be a secret: a webhook's path.
func shownTarget(kind, target string) string {
	if kind != governance.ChannelWebhook {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "(unreadable URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
