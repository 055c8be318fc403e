package handlers

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// SettingsShow shows the sign-in settings.
func (h *Handler) SettingsShow(c *gin.Context) {
	ls, err := h.identity.LoginSettings(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.renderSettings(c, http.StatusOK, templates.SettingsData{Notice: c.Query("notice"), LocalLogin: ls.LocalLogin,
		SessionIdle: ls.SessionIdle.String(), SessionLifetime: ls.SessionLifetime.String()})
}

func (h *Handler) renderSettings(c *gin.Context, status int, d templates.SettingsData) {
	var err error
	if d.Changes, err = h.recentChanges(c.Request.Context(), store.AuditFilter{ObjectTypes: []string{"setting"}}); err != nil {
		h.serverError(c, err)
		return
	}
	d.SSO, d.CanAdmin = h.identity.SSOEnabled(), canAdmin(c)
	if h.dispatch != nil {
		d.OutputKept, d.OutputLimit = "for good", logLimitText(h.dispatch.LogLimit())
		if keep := h.dispatch.LogRetention(); keep > 0 {
			d.OutputKept = dispatch.KeptFor(keep) + " after a job ends, then deleted"
		}
	}
	render(c, status, templates.Settings(h.page(c, "Settings", "admin"), d))
}

// logLimitText writes the log limit as `serve --job-log-limit-mib` sets it, in MiB (or
// GiB); in bytes where it is not whole MiB.
func logLimitText(n int64) string {
	if n%(1<<20) == 0 {
		return mibText(n >> 20)
	}
	return fmt.Sprintf("%d bytes", n)
}
