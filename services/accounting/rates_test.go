package accounting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Bad rates are refused naming the field and what is allowed, and nothing is stored.
func TestCreateRateRefusesBadInput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		img := &w.images["matlab"].ID
		nopool := int64(999)
		gpu := func(micros int64) models.CostRate {
			return models.CostRate{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: micros, EffectiveFrom: t0}
		}
		cases := []struct {
			name, field, says string
			r                 models.CostRate
		}{
			{"negative", "rate_micros", "negative", gpu(-1)},
			{"absurd", "rate_micros", "absurd; at most 1000000000 (1000.00 per gpu-hour)", gpu(5_000_000_000)},
			{"unknown resource", "resource", `"tpu" is not one of gpu, cpu`, models.CostRate{Resource: "tpu", EffectiveFrom: t0}},
			{"wrong unit", "unit", "not a unit of cpu rates (core-hour)", models.CostRate{Resource: "cpu", Unit: "gpu-hour", EffectiveFrom: t0}},
			{"model on cpu", "gpu_model", "only gpu rates name a GPU model", models.CostRate{Resource: "cpu", GPUModel: "A100-80GB", EffectiveFrom: t0}},
			{"licence without image", "image_id", "names the image", models.CostRate{Resource: "license", Unit: "job-hour", EffectiveFrom: t0}},
			{"image on gpu", "image_id", "only licence rates", models.CostRate{Resource: "gpu", ImageID: img, EffectiveFrom: t0}},
			{"licence unit", "unit", "job-hour or gpu-hour", models.CostRate{Resource: "license", ImageID: img, EffectiveFrom: t0}},
			{"capacity", "capacity_type", `"reserved" is not one of`, models.CostRate{Resource: "gpu", CapacityType: "reserved", EffectiveFrom: t0}},
			{"no date", "effective_from", "is required", models.CostRate{Resource: "gpu"}},
			{"unknown pool", "pool_id", "no pool 999", models.CostRate{Resource: "gpu", PoolID: &nopool, EffectiveFrom: t0}},
		}
		for _, c := range cases {
			_, err := w.acc.CreateRate(w.ctx, c.r)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Message, c.says) {
				t.Errorf("%s: error %v, want field %s saying %q", c.name, err, c.field, c.says)
			}
		}
		if rates, _ := w.acc.Rates(w.ctx); len(rates) != 0 {
			t.Errorf("refused rates were stored: %+v", rates)
		}
	})
}

// A key has one price per instant; a change never rewrites metered time, and a rate
// may be withdrawn only while it has priced nothing.
func TestRateChangesNeverRewriteThePast(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		spot := &h.pools["spot"].ID
		first := h.rate(models.CostRate{Resource: "gpu", GPUModel: "L4-24GB", PoolID: spot, RateMicros: 900_000, EffectiveFrom: at(6, 0)})
		_, err := h.acc.CreateRate(h.ctx, models.CostRate{Resource: "gpu", GPUModel: "L4-24GB", PoolID: spot, RateMicros: 950_000, EffectiveFrom: at(6, 0)})
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != "effective_from" || !strings.Contains(fe.Message, "overlaps") {
			t.Errorf("same key, same instant: %v, want an effective_from overlap", err)
		}
		// Another pool or capacity type is another key: no overlap.
		h.rate(models.CostRate{Resource: "gpu", GPUModel: "L4-24GB", RateMicros: 950_000, EffectiveFrom: at(6, 0)})

		h.meter(at(4, 10))
		_, err = h.acc.CreateRate(h.ctx, models.CostRate{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: 1, EffectiveFrom: at(3, 59)})
		if !errors.As(err, &fe) || fe.Field != "effective_from" || !strings.Contains(fe.Message, "never rewrites the past") {
			t.Errorf("rate inside metered time: %v, want refused on effective_from", err)
		}
		h.rate(models.CostRate{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: 1, EffectiveFrom: at(4, 0)})

		rates, err := h.acc.Rates(h.ctx)
		must(t, err)
		var used int64
		for _, r := range rates {
			if r.RateMicros == 14_000_000 {
				used = r.ID
			}
		}
		if err := h.acc.DeleteRate(h.ctx, used); err == nil || !strings.Contains(err.Error(), "has priced the ledger") {
			t.Errorf("deleting a rate that priced metered time: %v, want refused", err)
		}
		must(t, h.acc.DeleteRate(h.ctx, first.ID))
		if err := h.acc.DeleteRate(h.ctx, first.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleting it twice: %v, want ErrNotFound", err)
		}
		h.checkAmounts(t)
		if got := h.audited("cost_rate."); strings.Count(got, "cost_rate.created:system") != 11 || !strings.HasSuffix(got, " cost_rate.deleted:system") {
			t.Errorf("audited %q, want 11 rates created and one deleted", got)
		}
	})
}
