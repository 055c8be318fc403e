package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// CostRuleCreate adds a rule from the admin form.
func (h *Handler) CostRuleCreate(c *gin.Context) { h.saveRule(c, 0) }

// CostRuleUpdate replaces rule :id from its edit form.
func (h *Handler) CostRuleUpdate(c *gin.Context) {
	id, ok := paramID(c)
	if !ok {
		h.missingPage(c, "No such rule", "There is no rule "+c.Param("id")+".", rulesLink)
		return
	}
	h.saveRule(c, id)
}

// saveRule validates the form and creates (id 0) or updates the rule; bad input
// re-shows the form with the field named, and nothing changes.
func (h *Handler) saveRule(c *gin.Context, id int64) {
	form := templates.RuleForm{ID: id, Name: strings.TrimSpace(c.PostForm("name")), Metric: c.PostForm("metric"),
		Threshold: strings.TrimSpace(c.PostForm("threshold")), Window: strings.TrimSpace(c.PostForm("window")), Action: c.PostForm("action"),
		DryRun: c.PostForm("dry_run") == "on", Enabled: c.PostForm("enabled") == "on"}
	in := governance.RuleInput{Name: form.Name, Metric: form.Metric, Action: form.Action, DryRun: form.DryRun, Enabled: form.Enabled}
	var err error
	for _, raw := range c.PostFormArray("channels") {
		ch, perr := strconv.ParseInt(raw, 10, 64)
		if perr != nil {
			err = models.Invalid("channels", "%q is not one of the channels", raw)
		}
		form.Channels, in.ChannelIDs = append(form.Channels, ch), append(in.ChannelIDs, ch)
	}
	if err == nil {
		if in.Threshold, err = strconv.ParseFloat(form.Threshold, 64); err != nil {
			err = models.Invalid("threshold", "%q is not a number", form.Threshold)
		}
	}
	if err == nil {
		in.WindowSec, err = parseWindow(form.Window)
	}
	var r *models.AlertRule
	if err == nil {
		if id == 0 {
			r, err = h.gov.CreateRule(c.Request.Context(), in)
		} else {
			r, err = h.gov.UpdateRule(c.Request.Context(), id, in)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such rule", "There is no rule "+c.Param("id")+".", rulesLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		if fe.Field == "window_sec" {
			fe = &models.FieldError{Field: "window", Message: fe.Message}
		}
		h.renderRules(c, http.StatusBadRequest, templates.CostRulesData{Form: form, Flash: templates.CostAdminFlash{Error: fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	verb := "Added"
	if id != 0 {
		verb = "Saved"
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/rules?notice="+url.QueryEscape(verb+" rule "+r.Name+"."))
}
