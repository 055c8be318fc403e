package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// CostCurrencyUpdate names the currency every amount is in; a bad code re-shows the
// rates page with the field named, and nothing changes.
func (h *Handler) CostCurrencyUpdate(c *gin.Context) {
	code := strings.TrimSpace(c.PostForm("currency"))
	set, err := h.cost.SetCurrency(c.Request.Context(), code)
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderRates(c, http.StatusBadRequest, templates.CostRatesData{Form: defaultRateForm(), CurrencyForm: code,
			Flash: templates.CostAdminFlash{Error: fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/rates?notice="+url.QueryEscape("Amounts are now in "+set+"."))
}
