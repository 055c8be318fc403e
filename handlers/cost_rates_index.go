package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/templates"
)

// CostRatesIndex is the rate card: the currency, every rate with whether it is in
// effect, and the admin's forms to name the currency and add a rate.
func (h *Handler) CostRatesIndex(c *gin.Context) {
	d := templates.CostRatesData{Flash: templates.CostAdminFlash{Notice: c.Query("notice")}, Form: defaultRateForm()}
	h.renderRates(c, http.StatusOK, d)
}

// defaultRateForm proposes a GPU rate taking effect now.
func defaultRateForm() templates.RateForm {
	return templates.RateForm{Resource: models.ResourceGPU, EffectiveFrom: time.Now().UTC().Format(formMinute)}
}

// formMinute is how datetime-local inputs write an instant (read as UTC).
const formMinute = "2006-01-02T15:04"

// rateKey names the price timeline a rate belongs to, for its status.
type rateKey struct {
	resource, model, capacity string
	pool, image               int64
}

func (h *Handler) renderRates(c *gin.Context, status int, d templates.CostRatesData) {
	ctx := c.Request.Context()
	rates, err := h.cost.Rates(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if d.Currency, err = h.cost.Currency(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if d.CurrencyForm == "" {
		d.CurrencyForm = d.Currency
	}
	metered, ok, err := h.cost.MeteredUntil(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if ok {
		d.MeteredUntil = metered.UTC().Format(dayMinute)
	}
	pools, err := h.store.NodePools(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	images, err := h.store.Images(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	poolNames, imageNames := map[int64]string{}, map[int64]string{}
	d.Pools = []templates.Option{{Value: "", Label: "any pool"}}
	for _, p := range pools {
		poolNames[p.ID] = p.Name
		d.Pools = append(d.Pools, templates.Option{Value: strconv.FormatInt(p.ID, 10), Label: p.Name})
	}
	d.Images = []templates.Option{{Value: "", Label: "none"}}
	for _, img := range images {
		imageNames[img.ID] = img.Name
		d.Images = append(d.Images, templates.Option{Value: strconv.FormatInt(img.ID, 10), Label: img.Name})
	}
	d.Resources = costOptions(accounting.Resources)
	d.Units = append([]templates.Option{{Value: "", Label: "the resource's own"}}, costOptions(accounting.Units)...)
	d.Capacities = []templates.Option{{Value: "", Label: "any"}, {Value: models.CapacityOnDemand, Label: "on-demand"},
		{Value: models.CapacitySpot, Label: "spot"}, {Value: models.CapacityOwned, Label: "owned"}}
	d.CanEdit = permission(c).CanWrite(authz.Platform)

	now := time.Now().UTC()
	inEffect := map[rateKey]int64{} // the latest rate of each key that took effect
	for _, r := range rates {       // by effective date within each key
		if !r.EffectiveFrom.After(now) {
			inEffect[keyOfRate(r)] = r.ID
		}
	}
	for _, r := range rates {
		state := "superseded"
		switch {
		case r.EffectiveFrom.After(now):
			state = "scheduled"
		case inEffect[keyOfRate(r)] == r.ID:
			state = "in effect"
		}
		row := templates.RateRow{ID: r.ID, Resource: r.Resource, GPUModel: r.GPUModel, Capacity: r.CapacityType, Unit: r.Unit,
			Rate: accounting.FormatMicros(r.RateMicros), EffectiveFrom: r.EffectiveFrom.UTC().Format(dayMinute), Status: state,
			Withdrawable: !ok || !r.EffectiveFrom.Before(metered)}
		if r.PoolID != nil {
			row.Pool = poolNames[*r.PoolID]
		}
		if r.ImageID != nil {
			row.Image = imageNames[*r.ImageID]
		}
		d.Rows = append(d.Rows, row)
	}
	render(c, status, templates.CostRates(h.page(c, "Rates", "cost"), d))
}

// dayMinute is how the pages write an instant of the rate card.
const dayMinute = "2006-01-02 15:04 UTC"

func keyOfRate(r models.CostRate) rateKey {
	k := rateKey{resource: r.Resource, model: r.GPUModel, capacity: r.CapacityType}
	if r.PoolID != nil {
		k.pool = *r.PoolID
	}
	if r.ImageID != nil {
		k.image = *r.ImageID
	}
	return k
}
