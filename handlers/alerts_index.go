package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// alertsPage is how many alerts a page lists.
const alertsPage = 50

// alertStates are the state filter's choices.
var alertStates = []string{governance.StateFiring, governance.StateAcknowledged, governance.StateSilenced, governance.StateResolved}

// AlertsIndex lists the alerts the user may see, newest first: every alert for admins
// and auditors, otherwise those about their projects, their team's if they lead it,
// and their own jobs.
func (h *Handler) AlertsIndex(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	ctx := c.Request.Context()
	d := templates.AlertsData{State: c.Query("state"), States: []templates.Option{{Value: "", Label: "every state"}}}
	for _, s := range alertStates {
		d.States = append(d.States, templates.Option{Value: s, Label: s})
	}
	f := store.AlertFilter{Limit: 200}
	if d.State != "" {
		if !slices.Contains(alertStates, d.State) {
			h.errorPage(c, http.StatusBadRequest, "Unknown state", "State "+strconv.Quote(d.State)+" is not one of firing, acknowledged, silenced, resolved: pick one from the list.")
			return
		}
		f.States = []string{d.State}
	}
	if raw := c.Query("before"); raw != "" {
		before, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || before <= 0 {
			h.errorPage(c, http.StatusBadRequest, "Bad page", "Before: "+strconv.Quote(raw)+" is not an alert id; follow the page's own links.")
			return
		}
		f.BeforeID = before
	}
	v, err := h.costViewer(ctx, user)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Scope = "Alerts about your projects, your team's if you lead it, and your jobs."
	if v.all {
		d.Scope = "Every alert of every team."
	}
	subjects, err := h.alertSubjects(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	rules, err := h.gov.Rules(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	ruleName := map[int64]string{}
	for _, r := range rules {
		ruleName[r.ID] = r.Name
	}
	// Read pages of alerts until a page of visible ones is full: most users see few.
	for len(d.Rows) < alertsPage {
		page, err := h.gov.Alerts(ctx, f)
		if err != nil {
			h.serverError(c, err)
			return
		}
		for _, a := range page {
			sub, err := subjects.of(ctx, a)
			if err != nil {
				h.serverError(c, err)
				return
			}
			if !v.sees(sub) || len(d.Rows) == alertsPage {
				continue
			}
			d.Rows = append(d.Rows, alertRow(a, ruleName[a.RuleID], sub.label))
		}
		if len(page) < f.Limit {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	if len(d.Rows) == alertsPage {
		q := url.Values{"before": {strconv.FormatInt(d.Rows[len(d.Rows)-1].ID, 10)}}
		if d.State != "" {
			q.Set("state", d.State)
		}
		d.Next = "/alerts?" + q.Encode()
	}
	render(c, http.StatusOK, templates.Alerts(h.page(c, "Alerts", "alerts"), d))
}

func alertRow(a models.Alert, rule, subject string) templates.AlertRow {
	row := templates.AlertRow{ID: a.ID, Rule: rule, Subject: subject, Summary: alertSummary(a), FiredAt: a.FiredAt.UTC().Format(dayMinute), State: a.State}
	if rec, ok := governance.Action(a); ok {
		row.Action = rec.Kind + " " + strconv.Itoa(len(rec.Jobs)) + " job(s)"
		switch {
		case rec.DryRun:
			row.Action = "dry run: would " + row.Action
		case rec.Failed:
			row.Action += " (failed)"
		case rec.RevertedAt != nil:
			row.Action += " (reverted)"
		}
	}
	return row
}

// silences are the silence form's choices.
var silences = []struct {
	value, label string
	d            time.Duration
}{{"1h", "an hour", time.Hour}, {"8h", "8 hours", 8 * time.Hour}, {"24h", "a day", 24 * time.Hour}, {"7d", "a week", 7 * 24 * time.Hour}, {"30d", "30 days", 30 * 24 * time.Hour}}
