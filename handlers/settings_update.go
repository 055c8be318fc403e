package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/templates"
)

// SettingsUpdate saves the sign-in settings; bad input re-shows the form as typed.
func (h *Handler) SettingsUpdate(c *gin.Context) {
	d := templates.SettingsData{LocalLogin: c.PostForm("local_login") != "off",
		SessionIdle: strings.TrimSpace(c.PostForm("session_idle")), SessionLifetime: strings.TrimSpace(c.PostForm("session_lifetime"))}
	err := h.saveSettings(c, d)
	if h.failed(c, err, func(fe *models.FieldError) {
		d.Error, d.Field = fieldMessage(fe), fe.Field
		h.renderSettings(c, http.StatusBadRequest, d)
	}) {
		return
	}
	redirectNotice(c, "/admin/settings", "Settings saved.")
}

func (h *Handler) saveSettings(c *gin.Context, d templates.SettingsData) error {
	if v := c.PostForm("local_login"); v != "on" && v != "off" {
		return models.Invalid("local_login", "say on or off")
	}
	in := identity.LoginSettings{LocalLogin: d.LocalLogin}
	for _, f := range []struct {
		field, value string
		to           *time.Duration
	}{{"session_idle", d.SessionIdle, &in.SessionIdle}, {"session_lifetime", d.SessionLifetime, &in.SessionLifetime}} {
		v, err := time.ParseDuration(f.value)
		if err != nil {
			return models.Invalid(f.field, "%q is not a duration: write it like 30m, 12h or 168h", f.value)
		}
		*f.to = v
	}
	return h.identity.UpdateLoginSettings(c.Request.Context(), in)
}
