package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type nodesPage struct {
	Nodes []struct {
		Name  string
		Pool  string
		State string
		GPUs  []struct{ UUID string }
	}
	Removed    int
	NextCursor *string `json:"next_cursor"`
}

// GET /api/v1/nodes lists a page at a time by name, each node with its own GPUs; the
// cursors lead through every node once, within the filter.
func TestNodesAPIPagesThroughTheFleet(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	ctx := context.Background()
	pool := &models.NodePool{Name: "spot-east", Provider: "static", CapacityType: models.CapacitySpot, Template: "{}", ProviderConfig: "{}"}
	if err := st.CreateNodePool(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		n := &models.Node{Name: fmt.Sprintf("gpu-%02d", i), State: models.NodeReady}
		if i >= 5 {
			n.PoolID = &pool.ID
		}
		if i%3 == 0 {
			n.State = models.NodeLost
		}
		devs := []models.GPUDevice{{Index: 0, UUID: "GPU-of-" + n.Name, Model: "L4", MemoryMiB: 24576, Healthy: true}}
		if err := st.CreateNode(ctx, n, devs); err != nil {
			t.Fatal(err)
		}
	}
	h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{})
	r := gin.New()
	r.GET("/api/v1/nodes", h.NodesIndex)
	srv := httptest.NewServer(r)
	defer srv.Close()
	get := func(q url.Values) (int, string) {
		t.Helper()
		res, err := http.Get(srv.URL + "/api/v1/nodes?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	walk := func(q url.Values) (names []string, pages int) {
		t.Helper()
		for {
			status, body := get(q)
			var p nodesPage
			if status != http.StatusOK || json.Unmarshal([]byte(body), &p) != nil {
				t.Fatalf("GET /api/v1/nodes?%s = %d %s", q.Encode(), status, body)
			}
			pages++
			for _, n := range p.Nodes {
				if len(n.GPUs) != 1 || n.GPUs[0].UUID != "GPU-of-"+n.Name {
					t.Errorf("%s listed with GPUs %+v, not its own", n.Name, n.GPUs)
				}
				names = append(names, n.Name+"/"+n.State)
				if wantPool := map[bool]string{true: "spot-east"}[n.Name >= "gpu-05"]; n.Pool != wantPool {
					t.Errorf("%s listed in pool %q, want %q", n.Name, n.Pool, wantPool)
				}
			}
			if p.NextCursor == nil {
				return names, pages
			}
			q.Set("cursor", *p.NextCursor)
		}
	}
	if names, pages := walk(url.Values{"limit": {"3"}}); pages != 3 || strings.Join(names, " ") != "gpu-00/lost gpu-01/ready gpu-02/ready gpu-03/lost gpu-04/ready gpu-05/ready gpu-06/lost" {
		t.Errorf("limit 3: %d pages of %v; want the seven nodes by name over three", pages, names)
	}
	if names, pages := walk(url.Values{"limit": {"2"}, "state": {"lost"}}); pages != 2 || strings.Join(names, " ") != "gpu-00/lost gpu-03/lost gpu-06/lost" {
		t.Errorf("limit 2, lost: %d pages of %v; want the three lost ones over two", pages, names)
	}
	if names, pages := walk(url.Values{"name": {"GPU-0"}, "state": {"ready,lost"}}); pages != 1 || len(names) != 7 {
		t.Errorf("no limit: %d pages of %v; want the seven on one page", pages, names)
	}
	if names, _ := walk(url.Values{"name": {"-05"}}); strings.Join(names, " ") != "gpu-05/ready" {
		t.Errorf("name -05: %v", names)
	}
	if names, _ := walk(url.Values{"pool": {"spot-east"}}); strings.Join(names, " ") != "gpu-05/ready gpu-06/lost" {
		t.Errorf("pool spot-east: %v", names)
	}

	for q, field := range map[string]string{
		"limit=0": "limit", "limit=501": "limit", "limit=ten": "limit",
		"cursor=nonsense": "cursor", "cursor=" + "e30": "cursor",
		"state=asleep": "state", "state=ready,asleep": "state",
		"include_removed=maybe": "include_removed", "name=%00": "name", "pool=nowhere": "pool",
	} {
		res, err := http.Get(srv.URL + "/api/v1/nodes?" + q)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Field, Message string }
		}
		err = json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || err != nil || e.Error.Field != field || e.Error.Message == "" {
			t.Errorf("?%s = %d %+v; want 400 naming %s", q, res.StatusCode, e, field)
		}
	}
}
