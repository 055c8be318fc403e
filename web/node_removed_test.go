package web_test

import (
	"context"
	"encoding/json"
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

// A removed node leaves the node lists (console, cluster page, API) unless they are
// asked to show removed nodes, where it is labelled with the day it was removed; its
// own page stays, it counts neither as a node nor as capacity, and it is listed again
// once its agent joins again.
func TestRemovedNodesAreHiddenUntilAsked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		s.join("gpu-old", "4xL4-24GB")
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/nodes")
		res, _ := s.form(admin, token, "/admin/nodes/gpu-old/remove", "confirm", "yes")
		wantStatus(t, "remove", res, http.StatusSeeOther)
		label := "removed " + s.clock.now().UTC().Format(time.DateOnly)

		page := s.mustGet(admin, "/admin/nodes")
		if strings.Contains(page, `data-node="gpu-old"`) || !strings.Contains(page, `data-node="gpu-1"`) {
			t.Error("the nodes page lists the removed node by default, or not the one in service")
		}
		if !strings.Contains(page, `href="/admin/nodes?removed=1" data-testid="removed-toggle">Show removed (1)</a>`) {
			t.Error("the nodes page does not offer the removed node")
		}
		page = s.mustGet(admin, "/admin/nodes?removed=1")
		if !strings.Contains(page, `data-node="gpu-old"`) || !strings.Contains(page, `data-testid="state">`+label+`</span>`) || !strings.Contains(page, "Hide removed (1)") {
			t.Errorf("with ?removed=1 the nodes page does not list gpu-old as %q with a way back", label)
		}
		if strings.Contains(page, `action="/admin/nodes/gpu-old/remove"`) || strings.Contains(page, `id="ready-gpu-old"`) {
			t.Error("a removed node is offered state changes")
		}
		res, body := s.send(admin, "GET", "/admin/nodes?removed=yes", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Removed: &#34;yes&#34; is not 1") {
			t.Errorf("?removed=yes = %d; want 400 naming the parameter", res.StatusCode)
		}
		page = s.mustGet(admin, "/admin/nodes/gpu-old")
		if !strings.Contains(page, `data-testid="removed"`) || !strings.Contains(page, label) || !strings.Contains(page, "node.removed") {
			t.Error("the removed node's page does not say it was removed, or lost its history")
		}
		res, body = s.form(admin, token, "/admin/nodes/gpu-old/state", "state", "ready")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "joins again with a new join token") {
			t.Errorf("returning a removed node to service = %d; want 400 saying how it comes back", res.StatusCode)
		}

		page = s.mustGet(admin, "/cluster")
		if strings.Contains(page, "gpu-old") || !strings.Contains(page, `data-testid="gpus">2</p>`) || !strings.Contains(page, "ready; 0 other") || !strings.Contains(page, "Show removed (1)") {
			t.Error("the cluster page lists or counts the removed node by default, or does not offer it")
		}
		page = s.mustGet(admin, "/cluster?removed=1")
		if !strings.Contains(page, "gpu-old") || !strings.Contains(page, `<span class="badge node-removed">`+label+`</span>`) || !strings.Contains(page, `hx-get="/cluster?removed=1"`) {
			t.Errorf("the cluster page with ?removed=1 does not list gpu-old as %q, or its refresh drops the removed nodes", label)
		}
		if !strings.Contains(page, `data-testid="gpus">2</p>`) || !strings.Contains(page, "ready; 0 other") {
			t.Error("shown, the removed node counts as a node or as capacity")
		}
		if page = s.mustGet(admin, "/"); !strings.Contains(page, `data-testid="nodes">1</p>`) {
			t.Error("the home page counts the removed node")
		}

		type listing struct {
			Nodes []struct {
				Name      string     `json:"name"`
				RemovedAt *time.Time `json:"removed_at"`
			} `json:"nodes"`
			Removed int `json:"removed"`
		}
		list := func(query string) listing {
			t.Helper()
			var l listing
			if err := json.Unmarshal([]byte(s.mustGet(admin, "/api/v1/nodes"+query)), &l); err != nil {
				t.Fatal(err)
			}
			return l
		}
		if l := list(""); len(l.Nodes) != 1 || l.Nodes[0].Name != "gpu-1" || l.Removed != 1 {
			t.Errorf("GET /api/v1/nodes = %+v; want gpu-1 only, and 1 removed", l)
		}
		if l := list("?include_removed=true"); len(l.Nodes) != 2 || l.Nodes[1].Name != "gpu-old" || l.Nodes[1].RemovedAt == nil || l.Nodes[1].RemovedAt.Sub(s.clock.now()).Abs() > time.Millisecond || l.Nodes[0].RemovedAt != nil {
			t.Errorf("GET /api/v1/nodes?include_removed=true = %+v; want both, gpu-old with when it was removed", l)
		}
		res, body = s.send(admin, "GET", "/api/v1/nodes?include_removed=maybe", "", nil)
		var e struct {
			Error struct{ Field string } `json:"error"`
		}
		if res.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error.Field != "include_removed" {
			t.Errorf("include_removed=maybe = %d %s; want 400 naming include_removed", res.StatusCode, body)
		}

		s.join("gpu-old", "4xL4-24GB")
		if l := list(""); len(l.Nodes) != 2 || l.Removed != 0 {
			t.Errorf("after gpu-old joined again GET /api/v1/nodes = %+v; want both, none removed", l)
		}
		if page = s.mustGet(admin, "/admin/nodes"); !strings.Contains(page, `data-node="gpu-old"`) || strings.Contains(page, "removed-toggle") {
			t.Error("after joining again the node is not listed, or a toggle offers no removed node")
		}
		if n, _ := st.NodeByName(context.Background(), "gpu-old"); n.RemovedAt != nil {
			t.Errorf("after joining again the node is still removed at %v", n.RemovedAt)
		}
	})
}

// A pool's page lists its removed nodes (those of machines it deleted, say) only when
// asked, labelled with the day they were removed.
func TestPoolPageHidesRemovedNodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ctx := audit.WithActor(t.Context(), audit.System())
		p, _, err := pools.Apply(ctx, st, audit.New(st, time.Now), pools.Spec{Name: "onprem", Provider: pools.ProviderStatic, CapacityType: models.CapacityOwned,
			Template: pools.Template{GPUModel: "L4-24GB", GPUs: 1, CPUMilli: 8000, MemoryMiB: 32768}})
		if err != nil {
			t.Fatal(err)
		}
		removedAt := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
		for _, n := range []*models.Node{
			{Name: "rack-1", PoolID: &p.ID, State: models.NodeReady},
			{Name: "rack-9", PoolID: &p.ID, State: models.NodeDown, StateReason: "its machine was deleted", RemovedAt: &removedAt},
		} {
			if err := st.CreateNode(t.Context(), n, nil); err != nil {
				t.Fatal(err)
			}
		}
		page := s.mustGet(admin, "/admin/pools/onprem")
		if !strings.Contains(page, `data-node="rack-1"`) || strings.Contains(page, `data-node="rack-9"`) ||
			!strings.Contains(page, `href="/admin/pools/onprem?window=24h&amp;removed=1" data-testid="removed-toggle">Show removed (1)</a>`) {
			t.Error("the pool page lists its removed node by default, or does not offer it")
		}
		page = s.mustGet(admin, "/admin/pools/onprem?window=7d&removed=1")
		if !strings.Contains(page, `data-node="rack-9"`) || !strings.Contains(page, `<span class="badge node-removed">removed 2026-11-20</span>`) ||
			!strings.Contains(page, `href="/admin/pools/onprem?window=7d" data-testid="removed-toggle">Hide removed (1)</a>`) {
			t.Error("the pool page with ?removed=1 does not list rack-9 as removed 2026-11-20 with a way back")
		}
		if res, _ := s.send(admin, "GET", "/admin/pools/onprem?removed=all", "", nil); res.StatusCode != http.StatusBadRequest {
			t.Errorf("?removed=all = %d, want 400", res.StatusCode)
		}
	})
}
