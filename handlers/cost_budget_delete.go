package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
)

// CostBudgetDelete removes a budget; its rules stop watching it.
func (h *Handler) CostBudgetDelete(c *gin.Context) {
	id, ok := paramID(c)
	var err error
	if ok {
		err = h.cost.DeleteBudget(c.Request.Context(), id)
	}
	switch {
	case !ok || errors.Is(err, store.ErrNotFound):
		h.missingPage(c, "No such budget", "There is no budget "+c.Param("id")+".", budgetsLink)
	case err != nil:
		h.serverError(c, err)
	default:
		c.Redirect(http.StatusSeeOther, "/admin/cost/budgets?notice="+url.QueryEscape("Deleted the budget."))
	}
}
