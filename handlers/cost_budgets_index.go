package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/templates"
)

// budgetBurnWindow is the burn rate the pages forecast with, as governance's rules do.
const budgetBurnWindow = 7 * 24 * time.Hour

// CostBudgetsIndex lists every budget with its standing this month, and the admin's
// forms to add, change and delete them.
func (h *Handler) CostBudgetsIndex(c *gin.Context) {
	h.renderBudgets(c, http.StatusOK, templates.CostBudgetsData{Flash: templates.CostAdminFlash{Notice: c.Query("notice")},
		Form: templates.BudgetForm{Thresholds: percents(accounting.DefaultThresholds)}})
}

func (h *Handler) renderBudgets(c *gin.Context, status int, d templates.CostBudgetsData) {
	ctx := c.Request.Context()
	now := time.Now().UTC()
	statuses, err := h.cost.BudgetStatuses(ctx, now, budgetBurnWindow)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if d.Currency, err = h.cost.Currency(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	names, err := h.budgetOwners(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Owners = names.options
	d.Month = now.Format("January 2006")
	d.CanEdit = permission(c).CanWrite(authz.Platform)
	for _, st := range statuses {
		b := st.Budget
		owner := ""
		if b.TeamID != nil {
			owner = names.byKey["team:"+strconv.FormatInt(*b.TeamID, 10)]
		} else if b.ProjectID != nil {
			owner = names.byKey["project:"+strconv.FormatInt(*b.ProjectID, 10)]
		}
		d.Rows = append(d.Rows, templates.BudgetRow{ID: b.ID, Owner: owner, Amount: accounting.FormatMoney(b.AmountMicros),
			Thresholds: percents(st.Thresholds), Spent: accounting.FormatMoney(st.Spent), SpentPct: pct(st.SpentPercent()),
			Forecast: accounting.FormatMoney(st.Forecast), ForecastPct: pct(st.ForecastPercent()), Over: st.Forecast > b.AmountMicros})
	}
	render(c, status, templates.CostBudgets(h.page(c, "Budgets", "cost"), d))
}

// budgetOwnerNames are the teams and projects a budget can belong to, keyed team:ID
// and project:ID as the form writes them.
type budgetOwnerNames struct {
	byKey   map[string]string
	options []templates.Option
}

func (h *Handler) budgetOwners(ctx context.Context) (budgetOwnerNames, error) {
	out := budgetOwnerNames{byKey: map[string]string{}}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return out, err
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		return out, err
	}
	teamName := map[int64]string{}
	for _, t := range teams {
		teamName[t.ID] = t.Name
		key := "team:" + strconv.FormatInt(t.ID, 10)
		out.byKey[key] = "team " + t.Name
		out.options = append(out.options, templates.Option{Value: key, Label: "team " + t.Name})
	}
	for _, p := range projects {
		key := "project:" + strconv.FormatInt(p.ID, 10)
		out.byKey[key] = "project " + p.Name
		out.options = append(out.options, templates.Option{Value: key, Label: "project " + p.Name + " (team " + teamName[p.TeamID] + ")"})
	}
	return out, nil
}
