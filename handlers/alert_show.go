package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// AlertShow is one alert: its evidence, what its rule did or would have done, who was
// notified, and, for those who handle it, acknowledge, silence, resolve and revert.
// An alert the user may not see is answered as one that does not exist.
func (h *Handler) AlertShow(c *gin.Context) {
	d, _, ok := h.alertData(c)
	if !ok {
		return
	}
	d.Notice = c.Query("notice")
	render(c, http.StatusOK, templates.Alert(h.page(c, "Alert #"+strconv.FormatInt(d.ID, 10), "alerts"), d))
}

// alertData reads alert :id as the user may see it; it has answered when ok is false.
func (h *Handler) alertData(c *gin.Context) (templates.AlertData, *models.Alert, bool) {
	user := currentUser(c)
	if user == nil {
		return templates.AlertData{}, nil, false
	}
	ctx := c.Request.Context()
	id, ok := paramID(c)
	var a *models.Alert
	var deliveries []models.AlertDelivery
	var err error
	if ok {
		a, deliveries, err = h.gov.AlertByID(ctx, id)
	}
	notFound := func() {
		h.missingPage(c, "No such alert", "There is no alert "+c.Param("id")+" that you may see.", templates.Link{Href: "/alerts", Text: "The alerts page lists yours"})
	}
	switch {
	case !ok || errors.Is(err, store.ErrNotFound):
		notFound()
		return templates.AlertData{}, nil, false
	case err != nil:
		h.serverError(c, err)
		return templates.AlertData{}, nil, false
	}
	v, err := h.costViewer(ctx, user)
	if err != nil {
		h.serverError(c, err)
		return templates.AlertData{}, nil, false
	}
	subjects, err := h.alertSubjects(ctx)
	if err != nil {
		h.serverError(c, err)
		return templates.AlertData{}, nil, false
	}
	sub, err := subjects.of(ctx, *a)
	if err != nil {
		h.serverError(c, err)
		return templates.AlertData{}, nil, false
	}
	if !v.sees(sub) {
		h.conceal(c, "alert "+c.Param("id")+" is about "+sub.label+", which the caller may not see", notFound)
		return templates.AlertData{}, nil, false
	}
	d, err := h.describeAlert(ctx, *a, deliveries, sub)
	if err != nil {
		h.serverError(c, err)
		return templates.AlertData{}, nil, false
	}
	d.CanManage = v.manages(sub)
	if rec, ok := governance.Action(*a); ok && d.CanManage && !rec.DryRun && rec.RevertedAt == nil && len(rec.Jobs) > 0 && rec.Kind != governance.ActionRelease {
		d.CanRevert = true
	}
	return d, a, true
}

func (h *Handler) describeAlert(ctx context.Context, a models.Alert, deliveries []models.AlertDelivery, sub alertSubject) (templates.AlertData, error) {
	r, err := h.store.AlertRuleByID(ctx, a.RuleID)
	if err != nil {
		return templates.AlertData{}, err
	}
	d := templates.AlertData{ID: a.ID, Rule: r.Name, Metric: r.Metric, Subject: sub.label, Summary: alertSummary(a),
		FiredAt: a.FiredAt.UTC().Format(dayMinute), State: a.State}
	var ev map[string]any
	_ = json.Unmarshal([]byte(a.Evidence), &ev)
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if k != "summary" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	cur, err := h.cost.Currency(ctx)
	if err != nil {
		return templates.AlertData{}, err
	}
	for _, k := range keys {
		d.Evidence = append(d.Evidence, templates.EvidenceLine{Key: k, Value: evidenceValue(k, ev[k], cur)})
	}
	if a.AckedAt != nil {
		d.Acked = a.AckedAt.UTC().Format(dayMinute)
		if a.AckedByID != nil {
			if u, err := h.store.UserByID(ctx, *a.AckedByID); err == nil {
				d.Acked += " by " + u.Username
			}
		}
	}
	if a.SilencedUntil != nil && a.SilencedUntil.After(time.Now()) {
		d.SilencedUntil = a.SilencedUntil.UTC().Format(dayMinute)
	}
	if a.ResolvedAt != nil {
		d.Resolved = a.ResolvedAt.UTC().Format(dayMinute)
	}
	if rec, ok := governance.Action(a); ok {
		av := &templates.ActionView{Kind: rec.Kind, At: rec.At.UTC().Format(dayMinute), DryRun: rec.DryRun, Failed: rec.Failed, Notes: rec.Notes}
		for _, j := range rec.Jobs {
			av.Jobs = append(av.Jobs, templates.JobChangeLine{ID: j.JobID, Name: j.Name, From: j.From, To: j.To})
		}
		if rec.RevertedAt != nil {
			av.Reverted = rec.RevertedAt.UTC().Format(dayMinute) + " by " + rec.RevertedBy
		}
		d.Action = av
	}
	channels, err := h.gov.Channels(ctx)
	if err != nil {
		return templates.AlertData{}, err
	}
	names := map[int64]string{}
	for _, ch := range channels {
		names[ch.ID] = ch.Name + " (" + ch.Kind + ")"
	}
	for _, n := range deliveries {
		line := templates.DeliveryLine{Channel: names[n.ChannelID], State: n.State, Attempts: strconv.Itoa(n.Attempts), LastError: n.LastError}
		switch {
		case n.SentAt != nil:
			line.When = n.SentAt.UTC().Format(dayMinute)
		case n.State == models.DeliveryPending:
			line.When = "next try " + n.NextAttemptAt.UTC().Format(dayMinute)
		}
		d.Deliveries = append(d.Deliveries, line)
	}
	for _, s := range silences {
		d.Silences = append(d.Silences, templates.Option{Value: s.value, Label: s.label})
	}
	return d, nil
}

// alertSummary is the sentence an alert's evidence carries.
func alertSummary(a models.Alert) string {
	var ev struct{ Summary string }
	_ = json.Unmarshal([]byte(a.Evidence), &ev)
	return ev.Summary
}
