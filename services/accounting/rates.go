package accounting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Units of rates.
const (
	UnitGPUHour  = "gpu-hour"
	UnitCoreHour = "core-hour"
	UnitGiBHour  = "gib-hour"
	UnitGiBMonth = "gib-month" // a month is 730 hours, a twelfth of a year
	UnitGiB      = "gib"
	UnitJobHour  = "job-hour"
)

// Units lists every unit a rate can be priced in.
var Units = []string{UnitGPUHour, UnitCoreHour, UnitGiBHour, UnitGiBMonth, UnitGiB, UnitJobHour}

// resourceRule says which units a resource is priced in, which key fields it may use,
// and the highest price that is still believable (above it, a typo is likelier).
type resourceRule struct {
	units        []string
	gpuModel     bool
	image        bool // licences are priced per image, and only licences
	ceilingUnits int64
}

var resourceRules = map[string]resourceRule{
	models.ResourceGPU:     {units: []string{UnitGPUHour}, gpuModel: true, ceilingUnits: 1_000},
	models.ResourceCPU:     {units: []string{UnitCoreHour}, ceilingUnits: 100},
	models.ResourceRAM:     {units: []string{UnitGiBHour}, ceilingUnits: 100},
	models.ResourceScratch: {units: []string{UnitGiBMonth}, ceilingUnits: 1_000},
	models.ResourceStorage: {units: []string{UnitGiBMonth}, ceilingUnits: 1_000},
	models.ResourceEgress:  {units: []string{UnitGiB}, ceilingUnits: 100},
	models.ResourceLicense: {units: []string{UnitJobHour, UnitGPUHour}, image: true, ceilingUnits: 1_000},
}

// Resources lists the priced resources in the order pages show them.
var Resources = []string{
	models.ResourceGPU, models.ResourceCPU, models.ResourceRAM, models.ResourceScratch,
	models.ResourceStorage, models.ResourceEgress, models.ResourceLicense,
}

// QuantityUnit is the unit a roll-up's quantities of resource are counted in (a
// licence's in job-hours), or "" for a resource that has no rates.
func QuantityUnit(resource string) string {
	if rule, ok := resourceRules[resource]; ok {
		return rule.units[0]
	}
	return ""
}

var capacityTypes = []string{"", models.CapacityOnDemand, models.CapacitySpot, models.CapacityOwned}

// validateRate checks r and fills the unit when the resource has only one.
func validateRate(r *models.CostRate) error {
	rule, ok := resourceRules[r.Resource]
	if !ok {
		return models.Invalid("resource", "%q is not one of %s", r.Resource, strings.Join(Resources, ", "))
	}
	if r.Unit == "" && len(rule.units) == 1 {
		r.Unit = rule.units[0]
	}
	if !slices.Contains(rule.units, r.Unit) {
		return models.Invalid("unit", "%q is not a unit of %s rates (%s)", r.Unit, r.Resource, strings.Join(rule.units, " or "))
	}
	if r.RateMicros < 0 {
		return models.Invalid("rate_micros", "%d is negative; a rate is 0 or more micro-units per %s", r.RateMicros, r.Unit)
	}
	if ceiling := rule.ceilingUnits * MicrosPerUnit; r.RateMicros > ceiling {
		return models.Invalid("rate_micros", "%d (%s per %s) is absurd; at most %d (%s per %s)",
			r.RateMicros, FormatMoney(r.RateMicros), r.Unit, ceiling, FormatMoney(ceiling), r.Unit)
	}
	if r.GPUModel != "" && !rule.gpuModel {
		return models.Invalid("gpu_model", "only gpu rates name a GPU model, not %s rates", r.Resource)
	}
	if !slices.Contains(capacityTypes, r.CapacityType) {
		return models.Invalid("capacity_type", "%q is not one of on-demand, spot, owned (or empty for any)", r.CapacityType)
	}
	switch {
	case rule.image && r.ImageID == nil:
		return models.Invalid("image_id", "a licence rate names the image it is attached to")
	case !rule.image && r.ImageID != nil:
		return models.Invalid("image_id", "only licence rates attach to an image, not %s rates", r.Resource)
	}
	if r.EffectiveFrom.IsZero() {
		return models.Invalid("effective_from", "is required: the instant (UTC) the rate takes effect")
	}
	r.EffectiveFrom = r.EffectiveFrom.UTC().Truncate(time.Second)
	return nil
}

// CreateRate validates and adds a rate, audited with the actor of ctx. A rate takes
// effect at or after the end of the metered ledger, never before: a change never
// rewrites the past.
func (a *Accounting) CreateRate(ctx context.Context, r models.CostRate) (*models.CostRate, error) {
	r.ID = 0
	if err := validateRate(&r); err != nil {
		return nil, err
	}
	metered, ok, err := a.store.MeteredUntil(ctx)
	if err != nil {
		return nil, err
	}
	if ok && r.EffectiveFrom.Before(metered) {
		return nil, models.Invalid("effective_from", "%s is before %s, up to which the ledger is already metered; a rate change never rewrites the past",
			r.EffectiveFrom.Format(time.RFC3339), metered.Format(time.RFC3339))
	}
	poolOK, imageOK, err := a.store.RateReferencesExist(ctx, r.PoolID, r.ImageID)
	switch {
	case err != nil:
		return nil, err
	case !poolOK:
		return nil, models.Invalid("pool_id", "there is no pool %d", *r.PoolID)
	case !imageOK:
		return nil, models.Invalid("image_id", "there is no image %d", *r.ImageID)
	}
	err = a.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateCostRate(ctx, &r); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "cost_rate.created", ObjectType: "cost_rate", ObjectID: fmt.Sprint(r.ID), Detail: r})
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, models.Invalid("effective_from", "overlaps another %s rate of the same model, pool, capacity type and image that takes effect at %s; each takes effect at its own instant",
				r.Resource, r.EffectiveFrom.Format(time.RFC3339))
		}
		return nil, err
	}
	return &r, nil
}

// DeleteRate removes a rate that has not yet priced any metered time, audited.
func (a *Accounting) DeleteRate(ctx context.Context, id int64) error {
	metered, ok, err := a.store.MeteredUntil(ctx)
	if err != nil {
		return err
	}
	if !ok {
		metered = time.Time{}
	}
	err = a.store.InTx(ctx, func(tx *store.Store) error {
		r, err := tx.CostRateByID(ctx, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteCostRate(ctx, id, metered); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "cost_rate.deleted", ObjectType: "cost_rate", ObjectID: fmt.Sprint(id), Detail: r})
	})
	if err != nil {
		if errors.Is(err, store.ErrStale) {
			return fmt.Errorf("rate %d took effect before %s and has priced the ledger; add a newer rate instead: %w",
				id, metered.Format(time.RFC3339), err)
		}
		return err
	}
	return nil
}

// Rates returns every rate, by resource, GPU model and effective date.
func (a *Accounting) Rates(ctx context.Context) ([]models.CostRate, error) {
	return a.store.CostRates(ctx)
}

// MeteredUntil returns the end of the metered ledger: rates may take effect from there
// on. ok is false before the first metering.
func (a *Accounting) MeteredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	return a.store.MeteredUntil(ctx)
}
