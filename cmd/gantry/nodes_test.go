package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// gantry nodes ls reads every page of the API's nodes, each once, in order.
func TestAllNodesFollowsTheCursors(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	ctx := context.Background()
	for i := range 5 {
		if err := st.CreateNode(ctx, &models.Node{Name: fmt.Sprintf("n%d", i), State: models.NodeReady}, nil); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	r := gin.New()
	h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{})
	r.GET("/api/v1/nodes", func(c *gin.Context) { calls++; h.NodesIndex(c) })
	srv := httptest.NewServer(r)
	defer srv.Close()
	raws, removed, err := allNodes(ctx, &apiClient{base: srv.URL, http: srv.Client()}, url.Values{"limit": {"2"}})
	if err != nil || removed != 0 {
		t.Fatalf("allNodes = %v, %d, %v", raws, removed, err)
	}
	var names []string
	for _, raw := range raws {
		var n listedNode
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n.Name)
	}
	if fmt.Sprint(names) != "[n0 n1 n2 n3 n4]" || calls != 3 {
		t.Errorf("allNodes read %v in %d calls; want the five nodes in three", names, calls)
	}
}
