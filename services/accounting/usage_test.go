package accounting_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestRecordUsagePricesEgressAndStorage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		p := w.projects["detect"].ID
		gib := int64(1 << 30)
		_, err := w.acc.RecordUsage(w.ctx, accounting.Usage{Resource: "egress", ProjectID: p, Bytes: gib, From: at(0, 0), To: at(1, 0)})
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != "resource" || !strings.Contains(fe.Message, "no egress rate is in effect") {
			t.Errorf("egress with no rate: %v, want refused naming the missing rate", err)
		}
		w.rate(models.CostRate{Resource: "egress", RateMicros: 90_000, EffectiveFrom: at(-1, 0)})
		w.rate(models.CostRate{Resource: "egress", RateMicros: 50_000, EffectiveFrom: at(1, 0)})
		w.rate(models.CostRate{Resource: "storage", RateMicros: 100_000, EffectiveFrom: at(-1, 0)})
		w.rate(models.CostRate{Resource: "storage", RateMicros: 1_000 * accounting.MicrosPerUnit, EffectiveFrom: at(100, 0)})

		// 10 GiB over two hours: 5 GiB at 0.09 and 5 GiB at 0.05 after the change.
		job := w.job("fetch", "ada", "detect", "")
		_, err = w.acc.RecordUsage(w.ctx, accounting.Usage{Resource: "egress", ProjectID: p, JobID: &job.ID, UserID: &w.users["ada"].ID,
			Bytes: 10 * gib, From: at(0, 0), To: at(2, 0)})
		must(t, err)
		// 100 GiB held for 73 hours, a tenth of a 730-hour month, at 0.10 per GiB-month.
		_, err = w.acc.RecordUsage(w.ctx, accounting.Usage{Resource: "storage", ProjectID: p, Bytes: 100 * gib, From: at(0, 0), To: at(73, 0)})
		must(t, err)
		got := w.sums(store.RollupQuery{By: store.ByResource, From: t0, To: t0.AddDate(0, 0, 7), ProjectIDs: []int64{p}, ChargedOnly: true})
		if got["egress"] != 700_000 || got["storage"] != 1_000_000 {
			t.Errorf("usage charged %v, want egress 700000 and storage 1000000", got)
		}
		if got := w.audited("usage."); got != "usage.recorded:system usage.recorded:system" {
			t.Errorf("audited %q, want both recordings", got)
		}
		if c := w.jobCost(job); c["egress"] != 700_000 {
			t.Errorf("job egress = %v, want 700000", c)
		}

		for _, c := range []struct {
			u     accounting.Usage
			field string
		}{
			{accounting.Usage{Resource: "gpu", ProjectID: p, From: at(0, 0), To: at(1, 0)}, "resource"},
			{accounting.Usage{Resource: "egress", ProjectID: p, Bytes: -1, From: at(0, 0), To: at(1, 0)}, "bytes"},
			{accounting.Usage{Resource: "egress", ProjectID: p, From: at(1, 0), To: at(1, 0)}, "to"},
			// A century would be 36,525 ledger entries in one request, and one from year 1 millions.
			{accounting.Usage{Resource: "storage", ProjectID: p, Bytes: 1, From: at(0, 0), To: at(0, 0).AddDate(100, 0, 0)}, "to"},
			{accounting.Usage{Resource: "egress", ProjectID: p, Bytes: 1, From: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), To: at(0, 0)}, "to"},
			// 8 EiB held for two months at the most a GiB-month may cost passes 2^63 micro-units.
			{accounting.Usage{Resource: "storage", ProjectID: p, Bytes: math.MaxInt64, From: at(0, 0), To: at(24*61, 0)}, "bytes"},
			{accounting.Usage{Resource: "egress", ProjectID: 999, From: at(0, 0), To: at(1, 0)}, "project_id"},
			{accounting.Usage{Resource: "egress", ProjectID: w.projects["speech"].ID, JobID: &job.ID, From: at(0, 0), To: at(1, 0)}, "job_id"},
		} {
			_, err := w.acc.RecordUsage(w.ctx, c.u)
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("usage %+v: %v, want a %s error", c.u, err, c.field)
			}
		}
		if got := w.sums(store.RollupQuery{By: store.ByResource, From: t0, To: t0.AddDate(1, 0, 0), ProjectIDs: []int64{p}, ChargedOnly: true}); got["storage"] != 1_000_000 {
			t.Errorf("refused reports were charged: storage %v, want 1000000", got["storage"])
		}
	})
}
