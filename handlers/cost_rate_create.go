package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/templates"
)

// CostRateCreate adds a rate from the admin form; bad input re-shows the form with
// the field named, and nothing is stored.
func (h *Handler) CostRateCreate(c *gin.Context) {
	form := templates.RateForm{Resource: c.PostForm("resource"), Unit: c.PostForm("unit"), GPUModel: strings.TrimSpace(c.PostForm("gpu_model")),
		PoolID: c.PostForm("pool_id"), CapacityType: c.PostForm("capacity_type"), ImageID: c.PostForm("image_id"),
		Rate: strings.TrimSpace(c.PostForm("rate")), EffectiveFrom: strings.TrimSpace(c.PostForm("effective_from"))}
	r, err := parseRateForm(form)
	var created *models.CostRate
	if err == nil {
		created, err = h.cost.CreateRate(c.Request.Context(), r)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		if fe.Field == "rate_micros" {
			fe = &models.FieldError{Field: "rate", Message: fe.Message}
		}
		h.renderRates(c, http.StatusBadRequest, templates.CostRatesData{Form: form, Flash: templates.CostAdminFlash{Error: fieldMessage(fe), Field: fe.Field}})
	}) {
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	notice := "Added a " + created.Resource + " rate of " + accounting.FormatMicros(created.RateMicros) + " " + cur + " per " + created.Unit +
		", in effect from " + created.EffectiveFrom.Format(dayMinute) + "."
	c.Redirect(http.StatusSeeOther, "/admin/cost/rates?notice="+url.QueryEscape(notice))
}

// parseRateForm reads the form's text into a rate; the service validates the rest.
func parseRateForm(f templates.RateForm) (models.CostRate, error) {
	r := models.CostRate{Resource: f.Resource, Unit: f.Unit, GPUModel: f.GPUModel, CapacityType: f.CapacityType}
	var err error
	if r.RateMicros, err = accounting.ParseMoney(f.Rate); err != nil {
		return r, models.Invalid("rate", "%s", err.Error())
	}
	if r.PoolID, err = optionalID("pool_id", f.PoolID); err != nil {
		return r, err
	}
	if r.ImageID, err = optionalID("image_id", f.ImageID); err != nil {
		return r, err
	}
	if r.EffectiveFrom, err = parseInstant(f.EffectiveFrom); err != nil {
		return r, models.Invalid("effective_from", "%q is not a date and time: write YYYY-MM-DDTHH:MM, in UTC", f.EffectiveFrom)
	}
	return r, nil
}

// optionalID reads an id field that may be left empty.
func optionalID(field, s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return nil, models.Invalid(field, "%q is not one of the choices", s)
	}
	return &id, nil
}

// parseInstant reads what a datetime-local input, a date or RFC 3339 gives, as UTC.
func parseInstant(s string) (time.Time, error) {
	for _, layout := range []string{formMinute, formMinute + ":05", time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not an instant")
}
