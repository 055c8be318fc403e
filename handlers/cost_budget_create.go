package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/templates"
)

// CostBudgetCreate gives a team or a project a monthly budget from the admin form.
func (h *Handler) CostBudgetCreate(c *gin.Context) {
	form := templates.BudgetForm{Owner: c.PostForm("owner"), Amount: strings.TrimSpace(c.PostForm("amount")), Thresholds: c.PostForm("thresholds")}
	in, err := parseBudgetForm(form.Amount, form.Thresholds)
	if err == nil {
		err = budgetOwner(form.Owner, &in)
	}
	if err == nil {
		_, err = h.cost.CreateBudget(c.Request.Context(), in)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		fe = budgetField(fe)
		h.renderBudgets(c, http.StatusBadRequest, templates.CostBudgetsData{Form: form, Flash: templates.CostAdminFlash{Error: fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/budgets?notice="+url.QueryEscape("Added a budget of "+accounting.FormatAmount(in.AmountMicros, cur)+" a month."))
}

// parseBudgetForm reads an amount and thresholds as typed.
func parseBudgetForm(amount, thresholds string) (accounting.BudgetInput, error) {
	var in accounting.BudgetInput
	var err error
	if in.AmountMicros, err = accounting.ParseMoney(amount); err != nil {
		return in, models.Invalid("amount", "%s", err.Error())
	}
	in.Thresholds, err = parsePercents("thresholds", thresholds)
	return in, err
}

// budgetOwner reads "team:ID" or "project:ID" into in.
func budgetOwner(owner string, in *accounting.BudgetInput) error {
	kind, raw, _ := strings.Cut(owner, ":")
	id, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case err != nil:
	case kind == "team":
		in.TeamID = &id
		return nil
	case kind == "project":
		in.ProjectID = &id
		return nil
	}
	return models.Invalid("owner", "choose the team or project the budget is for")
}

// budgetField names the form's fields in the service's errors.
func budgetField(fe *models.FieldError) *models.FieldError {
	switch fe.Field {
	case "amount_micros":
		return &models.FieldError{Field: "amount", Message: fe.Message}
	case "team_id", "project_id":
		return &models.FieldError{Field: "owner", Message: fe.Message}
	}
	return fe
}
