package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// CostRulesIndex lists the anomaly rules, with the admin's form to add one.
func (h *Handler) CostRulesIndex(c *gin.Context) {
	h.renderRules(c, http.StatusOK, templates.CostRulesData{Flash: templates.CostAdminFlash{Notice: c.Query("notice")},
		Form: templates.RuleForm{Metric: governance.MetricTeamCostRatio, Action: governance.ActionNotify, Enabled: true, DryRun: true}})
}

// CostRuleShow is one rule's edit form.
func (h *Handler) CostRuleShow(c *gin.Context) {
	id, ok := paramID(c)
	var r *models.AlertRule
	var err error
	if ok {
		r, err = h.store.AlertRuleByID(c.Request.Context(), id)
	}
	switch {
	case !ok || errors.Is(err, store.ErrNotFound):
		h.missingPage(c, "No such rule", "There is no rule "+c.Param("id")+".", rulesLink)
		return
	case err != nil:
		h.serverError(c, err)
		return
	}
	var ids []int64
	_ = json.Unmarshal([]byte(r.Channels), &ids)
	form := templates.RuleForm{ID: r.ID, Name: r.Name, Metric: r.Metric, Threshold: strconv.FormatFloat(r.Threshold, 'g', -1, 64),
		Window: window(r.WindowSec), Action: r.Action, DryRun: r.DryRun, Enabled: r.Enabled, Channels: ids}
	h.renderRules(c, http.StatusOK, templates.CostRulesData{Form: form})
}

func (h *Handler) renderRules(c *gin.Context, status int, d templates.CostRulesData) {
	ctx := c.Request.Context()
	rules, err := h.gov.Rules(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	channels, err := h.gov.Channels(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	names := map[int64]string{}
	for _, ch := range channels {
		names[ch.ID] = ch.Name
		d.Channels = append(d.Channels, templates.Option{Value: strconv.FormatInt(ch.ID, 10), Label: ch.Name + " (" + ch.Kind + ")"})
	}
	for _, r := range rules {
		var ids []int64
		_ = json.Unmarshal([]byte(r.Channels), &ids)
		var via []string
		for _, id := range ids {
			via = append(via, names[id])
		}
		d.Rows = append(d.Rows, templates.RuleRow{ID: r.ID, Name: r.Name, Metric: r.Metric, Threshold: strconv.FormatFloat(r.Threshold, 'g', -1, 64),
			Window: window(r.WindowSec), Action: r.Action, Channels: strings.Join(via, ", "), DryRun: r.DryRun, Enabled: r.Enabled})
	}
	actions := map[string]bool{}
	for _, m := range governance.Metrics {
		d.Metrics = append(d.Metrics, templates.MetricHelp{Name: m.Name, Scope: m.Scope, Threshold: m.Threshold, Window: m.Window, Actions: strings.Join(m.Actions, ", ")})
		for _, a := range m.Actions {
			if !actions[a] {
				actions[a] = true
				d.Actions = append(d.Actions, templates.Option{Value: a, Label: a})
			}
		}
	}
	d.CanEdit = permission(c).CanWrite(authz.Platform)
	render(c, status, templates.CostRules(h.page(c, "Rules", "cost"), d))
}

// window writes a rule's window as the form reads it: whole days, hours or minutes.
func window(sec int64) string {
	d := time.Duration(sec) * time.Second
	switch {
	case sec == 0:
		return ""
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(sec, 10) + "s"
}

// parseWindow reads "7d", "12h", "90m", "30s" or "0" (none) into seconds.
func parseWindow(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err == nil && n > 0 && n < 10_000 {
			return n * 86_400, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 && d%time.Second == 0 {
		return int64(d / time.Second), nil
	}
	return 0, models.Invalid("window", "%q is not a window: write whole days, hours or minutes such as 7d, 12h or 90m (0 for none)", s)
}
