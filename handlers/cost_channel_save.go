package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// CostChannelCreate adds a notification channel from the admin form.
func (h *Handler) CostChannelCreate(c *gin.Context) {
	form := channelForm(c)
	ch, err := h.gov.CreateChannel(c.Request.Context(), governance.ChannelInput{Name: form.Name, Kind: form.Kind, Target: form.Target, Enabled: form.Enabled})
	h.channelSaved(c, form, ch, err, "Added")
}

// CostChannelUpdate replaces channel :id; an empty target keeps the one it has, so
// that a webhook's secret URL need not be shown to be kept.
func (h *Handler) CostChannelUpdate(c *gin.Context) {
	id, ok := paramID(c)
	if !ok {
		h.missingPage(c, "No such channel", "There is no channel "+c.Param("id")+".", channelsLink)
		return
	}
	form := channelForm(c)
	form.ID = id
	in := governance.ChannelInput{Name: form.Name, Kind: form.Kind, Target: form.Target, Enabled: form.Enabled}
	var err error
	if in.Target == "" {
		in.Target, err = h.channelTarget(c, id)
	}
	var ch *models.NotificationChannel
	if err == nil {
		ch, err = h.gov.UpdateChannel(c.Request.Context(), id, in)
	}
	h.channelSaved(c, form, ch, err, "Saved")
}

func channelForm(c *gin.Context) templates.ChannelForm {
	return templates.ChannelForm{Name: strings.TrimSpace(c.PostForm("name")), Kind: c.PostForm("kind"),
		Target: strings.TrimSpace(c.PostForm("target")), Enabled: c.PostForm("enabled") == "on"}
}

// channelTarget is the target channel id has now.
func (h *Handler) channelTarget(c *gin.Context, id int64) (string, error) {
	channels, err := h.gov.Channels(c.Request.Context())
	if err != nil {
		return "", err
	}
	for _, ch := range channels {
		if ch.ID == id {
			return ch.Target, nil
		}
	}
	return "", store.ErrNotFound
}

func (h *Handler) channelSaved(c *gin.Context, form templates.ChannelForm, ch *models.NotificationChannel, err error, verb string) {
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such channel", "There is no channel "+c.Param("id")+".", channelsLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderChannels(c, http.StatusBadRequest, templates.CostChannelsData{Form: form, Flash: templates.CostAdminFlash{Error: fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	state := "enabled"
	if !ch.Enabled {
		state = "disabled"
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/channels?notice="+url.QueryEscape(verb+" channel "+ch.Name+" ("+state+")."))
}
