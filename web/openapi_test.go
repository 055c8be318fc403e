package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var ginParam = regexp.MustCompile(`:([a-z]+)`)

// The served OpenAPI document is valid OpenAPI 3, documents every /api/v1 route of the
// table (the agent protocol is left out on purpose: agents are not API clients, and
// services/agentapi is its description), and documents no route that does not exist.
func TestOpenAPIDocumentMatchesTheRoutes(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	srv := httptest.NewServer(NewRouter(Config{Store: st, Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /api/v1/openapi.json without signing in = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatalf("load the document: %v", err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3: %v", err)
	}

	served := map[string]bool{}
	for _, r := range routes(handlers.New(st, "test", nil, handlers.Services{})) {
		if !strings.HasPrefix(r.path, "/api/v1/") || r.access.kind == agent {
			continue
		}
		key := r.method + " " + ginParam.ReplaceAllString(r.path, "{$1}")
		served[key] = true
		path := strings.TrimPrefix(key, r.method+" ")
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(r.method) == nil {
			t.Errorf("%s %s is served but not in the OpenAPI document: document it in handlers/openapi.json", r.method, path)
		}
	}
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, "/api/v1/agent") {
			t.Errorf("%s: the agent protocol is not part of the documented API", path)
		}
		for method := range item.Operations() {
			if !served[method+" "+path] {
				t.Errorf("%s %s is documented but no route serves it", method, path)
			}
		}
	}
	if len(served) < 10 {
		t.Fatalf("only %d API routes found: the table was not read", len(served))
	}
}
