package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

func newServer(t *testing.T, st *store.Store) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "v0.0.0-test", Log: log}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHealthReadyAndHome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		srv := newServer(t, st)
		res, body := get(t, srv.URL+"/healthz")
		if res.StatusCode != 200 || !strings.Contains(body, `"status":"ok"`) {
			t.Fatalf("healthz = %d %s", res.StatusCode, body)
		}
		res, body = get(t, srv.URL+"/readyz")
		var ready struct {
			Status   string
			Database string
			Schema   store.SchemaStatus
		}
		if err := json.Unmarshal([]byte(body), &ready); err != nil || res.StatusCode != 200 || ready.Status != "ok" || ready.Database != st.Dialect() || !ready.Schema.Ready() {
			t.Fatalf("readyz = %d %s", res.StatusCode, body)
		}
		res, body = get(t, srv.URL+"/")
		if res.StatusCode != 200 || !strings.Contains(body, "Sign in to Gantry") || res.Request.URL.Path != "/login" {
			t.Fatalf("home without a session = %d at %s, want the sign-in page", res.StatusCode, res.Request.URL)
		}
		s := newSite(t, st, false)
		res, body = s.send(s.signIn("admin", s.password), "GET", "/", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "Welcome to Gantry") || !strings.Contains(body, "Gantry v0.0.0-test") {
			t.Fatalf("home = %d", res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("home content type %q", ct)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Content-Security-Policy") == "" {
			t.Error("security headers missing")
		}
	})
}

func TestReadyzRefusesNewerSchema(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			storetest.Exec(t, cfg, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', CURRENT_TIMESTAMP)")
			srv := newServer(t, st)
			res, body := get(t, srv.URL+"/readyz")
			if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "gantry migrate") {
				t.Fatalf("readyz on a newer schema = %d %s, want 503 naming the fix", res.StatusCode, body)
			}
		})
	}
}

func TestReadyzWhenDatabaseIsGone(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	srv := newServer(t, st)
	st.Close()
	res, body := get(t, srv.URL+"/readyz")
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") {
		t.Fatalf("readyz with a closed database = %d %s", res.StatusCode, body)
	}
	// The driver's error stays in the server's log: a public route names no database detail.
	if rid := res.Header.Get("X-Request-Id"); rid == "" || !strings.Contains(body, "request id "+rid) || strings.Contains(body, "closed") {
		t.Errorf("readyz says %s; want the request id %q and no driver error", body, rid)
	}
	if res, _ := get(t, srv.URL+"/healthz"); res.StatusCode != 200 {
		t.Fatalf("healthz must not depend on the database: %d", res.StatusCode)
	}
}

func TestNotFoundAndRequestIDAndStatic(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	srv := newServer(t, st)

	res, body := get(t, srv.URL+"/no/such/page")
	if res.StatusCode != 404 || !strings.Contains(body, "Page not found") {
		t.Errorf("page 404 = %d", res.StatusCode)
	}
	res, body = get(t, srv.URL+"/api/v1/nope")
	var apiErr struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &apiErr); err != nil || res.StatusCode != 404 || apiErr.Error.Code != "not_found" {
		t.Errorf("API 404 = %d %s", res.StatusCode, body)
	}

	res, _ = get(t, srv.URL+"/healthz", "X-Request-ID", "client-chosen-id-1")
	if res.Header.Get("X-Request-ID") != "client-chosen-id-1" {
		t.Errorf("inbound request id not kept: %q", res.Header.Get("X-Request-ID"))
	}
	res, _ = get(t, srv.URL+"/healthz", "X-Request-ID", "bad id with spaces")
	if id := res.Header.Get("X-Request-ID"); len(id) != 16 {
		t.Errorf("a malformed request id must be replaced, got %q", id)
	}

	res, body = get(t, srv.URL+"/static/css/gantry.css")
	if res.StatusCode != 200 || !strings.Contains(body, "--accent") {
		t.Errorf("stylesheet = %d", res.StatusCode)
	}
	res, body = get(t, srv.URL+"/static/js/htmx.min.js")
	if res.StatusCode != 200 || !strings.Contains(body, "htmx") {
		t.Errorf("htmx = %d", res.StatusCode)
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, ln, web.NewRouter(web.Config{Store: st, Log: log}), log) }()
	if res, _ := get(t, "http://"+ln.Addr().String()+"/healthz"); res.StatusCode != 200 {
		t.Fatalf("healthz = %d", res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after a clean stop", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}
