package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestNodeAPI(t *testing.T) {
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	ctx := context.Background()
	al := audit.New(st, time.Now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: al, Now: time.Now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := dispatch.CreateJoinToken(ctx, st, al, time.Now(), dispatch.JoinTokenSpec{Name: "t", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := gpu.NewSimulated("2xL4-24GB", "gpu-1", time.Now)
	inv, _ := sim.Discover(ctx)
	joined, err := d.Join(ctx, agentapi.JoinRequest{JoinToken: token, Name: "gpu-1", Runtime: agentapi.RuntimeProcess, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	h := handlers.New(st, "test", log, handlers.Services{Dispatch: d, Audit: al})
	r := gin.New()
	r.GET("/api/v1/nodes", h.NodesIndex)
	r.POST("/api/v1/nodes/:name/state", h.NodeStateUpdate)
	r.POST("/api/v1/nodes/:name/revoke", h.NodeRevoke)
	srv := httptest.NewServer(r)
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, body := do("GET", "/api/v1/nodes", "")
	var list struct {
		Nodes []struct {
			Name      string
			State     string
			Simulated bool
			GPUs      []struct{ Model string }
		}
	}
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil || len(list.Nodes) != 1 || !list.Nodes[0].Simulated || len(list.Nodes[0].GPUs) != 2 || list.Nodes[0].GPUs[0].Model != "L4-24GB" {
		t.Fatalf("nodes = %d %s", status, body)
	}
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"state": "draining", "reason": "kernel update", "drain_for": "30m"}`, 200, `"state":"draining"`},
		{`{"state": "draining", "drain_for": "soon"}`, 400, `"field":"drain_for"`},
		{`{"state": "asleep"}`, 400, `"field":"state"`},
		{`not json`, 400, `"field":"body"`},
		{`{"state": "cordoned", "reson": "typo"}`, 400, `"field":"reson"`}, // not cordoned without its reason
		{`{"state": 1}`, 400, `"message":"must be a string, not number","field":"state"`},
		{`{"state": "cordoned", "reason": "` + strings.Repeat("x", 70<<10) + `"}`, 400, `"field":"reason"`},
		{`{"state": "cordoned"}`, 200, `"state":"cordoned"`},
		{`{"state": "ready"}`, 200, `"state":"ready"`},
		{`{"state": "ready"}`, 200, `"state":"ready"`}, // as it is
	} {
		if status, body := do("POST", "/api/v1/nodes/gpu-1/state", tc.body); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("state %s = %d %s, want %d with %s", tc.body, status, body, tc.status, tc.want)
		}
	}
	if status, _ := do("POST", "/api/v1/nodes/nope/state", `{"state": "ready"}`); status != 404 {
		t.Errorf("state of no node = %d", status)
	}
	if status, body := do("POST", "/api/v1/nodes/gpu-1/revoke", ""); status != 200 || !strings.Contains(body, "revoked") {
		t.Fatalf("revoke = %d %s", status, body)
	}
	if _, err := d.Authenticate(ctx, joined.Credential); err == nil {
		t.Fatal("a revoked credential still authenticates")
	}
	if n, _ := st.NodeByName(ctx, "gpu-1"); n.State != models.NodeReady {
		t.Fatalf("node = %s", n.State)
	}
}
