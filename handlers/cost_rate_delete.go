package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// CostRateDelete withdraws a rate that has priced no metered time yet; one that has
// stays, and the page says to add a newer rate instead.
func (h *Handler) CostRateDelete(c *gin.Context) {
	id, ok := paramID(c)
	var err error
	if ok {
		err = h.cost.DeleteRate(c.Request.Context(), id)
	}
	switch {
	case !ok || errors.Is(err, store.ErrNotFound):
		h.missingPage(c, "No such rate", "There is no rate "+c.Param("id")+".", templates.Link{Href: "/admin/cost/rates", Text: "See them all on the rates page"})
	case errors.Is(err, store.ErrStale):
		msg := "That rate has priced metered time, so it stays: add a newer rate to change the price from now on."
		h.renderRates(c, http.StatusConflict, templates.CostRatesData{Form: defaultRateForm(), Flash: templates.CostAdminFlash{Error: msg}})
	case err != nil:
		h.serverError(c, err)
	default:
		c.Redirect(http.StatusSeeOther, "/admin/cost/rates?notice="+url.QueryEscape("Withdrew the rate."))
	}
}
