package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Admins see the pools, one pool's chart, nodes and decisions (paged); members are
// refused; a bad window or an unknown pool is answered with what to do.
func TestPoolPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ada, _ := s.member("ada")
		res, body := s.send(admin, "GET", "/admin/pools", "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="no-pools"`) || !strings.Contains(body, "gantry pool apply") {
			t.Fatalf("empty pools page = %d", res.StatusCode)
		}
		ctx := audit.WithActor(t.Context(), audit.System())
		p, _, err := pools.Apply(ctx, st, audit.New(st, time.Now), pools.Spec{Name: "l4-spot", Provider: pools.ProviderExec, Region: "eu-west-1",
			CapacityType: models.CapacitySpot, MaxNodes: 8, Template: pools.Template{GPUModel: "L4-24GB", GPUs: 1, CPUMilli: 8000, MemoryMiB: 32768},
			ProviderConfig: map[string]any{"command": []any{"/etc/gantry/pool.sh"}}})
		if err != nil {
			t.Fatal(err)
		}
		rate := models.CostRate{Resource: models.ResourceGPU, GPUModel: "L4-24GB", CapacityType: models.CapacitySpot, Unit: "gpu-hour",
			RateMicros: 250_000, EffectiveFrom: time.Now().Add(-time.Hour).UTC()}
		if err := st.CreateCostRate(t.Context(), &rate); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		var samples []models.PoolSample
		for i, n := range []int{0, 0, 2, 3, 1} {
			samples = append(samples, models.PoolSample{PoolID: p.ID, At: now.Add(time.Duration(i-5) * time.Minute), Nodes: n, PendingJobs: 4 - i})
		}
		if err := st.CreatePoolSamples(t.Context(), samples); err != nil {
			t.Fatal(err)
		}
		for i := range 55 {
			e := models.PoolEvent{PoolID: &p.ID, At: now.Add(time.Duration(i-60) * time.Minute), Kind: models.PoolScaleUp, Nodes: 1,
				Reason: fmt.Sprintf("decision %02d: 1 waiting job fit no node in service", i)}
			if err := st.CreatePoolEvent(t.Context(), &e); err != nil {
				t.Fatal(err)
			}
		}

		res, body = s.send(admin, "GET", "/admin/pools", "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-pool="l4-spot"`) || !strings.Contains(body, "0.25 USD a node-hour") ||
			!strings.Contains(body, "decision 54") || !strings.Contains(body, "eu-west-1") {
			t.Fatalf("pools page = %d", res.StatusCode)
		}
		res, body = s.send(admin, "GET", "/admin/pools/l4-spot", "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="pool-chart" data-peak="4"`) || strings.Count(body, "<polyline") != 3 {
			t.Fatalf("pool page = %d, want the chart of 5 samples", res.StatusCode)
		}
		if !strings.Contains(body, `href="/admin/cost/rates" data-testid="rate-card"`) {
			t.Fatal("the pool page does not link its price to the rate card")
		}
		if !strings.Contains(body, "decision 54") || strings.Contains(body, "decision 04") || !strings.Contains(body, "Older decisions") {
			t.Fatal("the first page of decisions is not the 50 newest with a link to older ones")
		}
		i := strings.Index(body, `hx-get="`)
		older := strings.ReplaceAll(body[i+len(`hx-get="`):i+strings.Index(body[i:], `" hx-select`)], "&amp;", "&")
		res, body = s.send(admin, "GET", older, "", map[string]string{"HX-Request": "true"})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "decision 04") || strings.Contains(body, "decision 05") || strings.Contains(body, "Older decisions") {
			t.Fatalf("older decisions (%s) = %d", older, res.StatusCode)
		}
		if !strings.Contains(body, `id="pool-events"`) {
			t.Fatal("the page has no events section for htmx to select")
		}

		res, body = s.send(admin, "GET", "/admin/pools/l4-spot?window=1y", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not one of 24h, 7d, 30d") {
			t.Fatalf("bad window = %d", res.StatusCode)
		}
		res, body = s.send(admin, "GET", "/admin/pools/l4-spot?before=x", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not an event id") {
			t.Fatalf("bad before = %d", res.StatusCode)
		}
		if res, _ = s.send(admin, "GET", "/admin/pools/h100", "", nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown pool = %d, want 404", res.StatusCode)
		}
		if res, _ = s.send(ada, "GET", "/admin/pools/l4-spot", "", nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("a member on the pool page = %d, want 403", res.StatusCode)
		}
	})
}
