package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// CostBudgetUpdate changes a budget's amount and thresholds.
func (h *Handler) CostBudgetUpdate(c *gin.Context) {
	id, ok := paramID(c)
	if !ok {
		h.missingPage(c, "No such budget", "There is no budget "+c.Param("id")+".", budgetsLink)
		return
	}
	in, err := parseBudgetForm(c.PostForm("amount"), c.PostForm("thresholds"))
	var b *models.Budget
	if err == nil {
		b, err = h.cost.UpdateBudget(c.Request.Context(), id, in)
	}
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such budget", "There is no budget "+c.Param("id")+".", budgetsLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		fe = budgetField(fe)
		h.renderBudgets(c, http.StatusBadRequest, templates.CostBudgetsData{Form: templates.BudgetForm{Thresholds: percents(accounting.DefaultThresholds)},
			Flash: templates.CostAdminFlash{Error: "Budget not changed. " + fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/budgets?notice="+url.QueryEscape("Saved the budget: "+accounting.FormatAmount(b.AmountMicros, cur)+" a month."))
}
