package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// AlertAcknowledge records that the user is on alert :id.
func (h *Handler) AlertAcknowledge(c *gin.Context) {
	h.changeAlert(c, func(a *models.Alert, user *models.User) (string, error) {
		_, err := h.gov.Acknowledge(c.Request.Context(), a.ID, user.ID, time.Now())
		return "Acknowledged: others see that you are on it.", err
	})
}

// AlertResolve closes alert :id.
func (h *Handler) AlertResolve(c *gin.Context) {
	h.changeAlert(c, func(a *models.Alert, _ *models.User) (string, error) {
		_, err := h.gov.Resolve(c.Request.Context(), a.ID, time.Now())
		return "Resolved.", err
	})
}

// AlertSilence mutes the rule of alert :id for its subject for the chosen time.
func (h *Handler) AlertSilence(c *gin.Context) {
	h.changeAlert(c, func(a *models.Alert, _ *models.User) (string, error) {
		choice := c.PostForm("for")
		for _, s := range silences {
			if s.value == choice {
				now := time.Now()
				got, err := h.gov.Silence(c.Request.Context(), a.ID, now.Add(s.d), now)
				if err != nil {
					return "", err
				}
				return "Silenced until " + got.SilencedUntil.UTC().Format(dayMinute) + ": the rule raises no alert about this until then.", nil
			}
		}
		return "", models.Invalid("for", "%q is not a choice: silence for an hour, 8 hours, a day, a week or 30 days", choice)
	})
}

// AlertRevert undoes the action of alert :id as far as its jobs are still as it left them.
func (h *Handler) AlertRevert(c *gin.Context) {
	h.changeAlert(c, func(a *models.Alert, _ *models.User) (string, error) {
		_, err := h.gov.Revert(c.Request.Context(), a.ID, time.Now())
		return "Reverted: the jobs it changed are back as they were, unless they moved on since (see the notes).", err
	})
}

// changeAlert answers a change to alert :id: not found unless the user sees it,
// refused unless they handle it (admins; leads of a team it concerns), else fn's
// notice, or its error re-shown on the alert's page.
func (h *Handler) changeAlert(c *gin.Context, fn func(*models.Alert, *models.User) (string, error)) {
	d, a, ok := h.alertData(c)
	if !ok {
		return
	}
	if !d.CanManage {
		h.deny(c, "Not yours to handle", "Only admins and the leads of the team an alert concerns handle it. Ask them, or tell them through Feedback.")
		return
	}
	notice, err := fn(a, currentUser(c))
	if h.failed(c, err, func(fe *models.FieldError) {
		d.Error = fieldMessage(fe)
		render(c, http.StatusBadRequest, templates.Alert(h.page(c, "Alert #"+strconv.FormatInt(a.ID, 10), "alerts"), d))
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/alerts/"+strconv.FormatInt(a.ID, 10)+"?notice="+url.QueryEscape(notice))
}
