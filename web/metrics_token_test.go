package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// With a metrics token, /metrics answers only the scrape that sends it as a Bearer
// token: none, a wrong one, a malformed header, an admin's session or API token are
// refused with 401, each refusal audited; the token itself is in no audit event.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const token = "scrape-3f9c1e7a5b2d4c6e"
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv := httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "test", Log: log, MetricsToken: token,
			Auth: identity.Options{BcryptCost: 4}}))
		t.Cleanup(srv.Close)

		al := audit.New(st, time.Now)
		az := authz.New(st, al)
		id := identity.New(st, al, az, time.Now, identity.Options{BcryptCost: 4})
		admin := &models.User{Username: "root"}
		must(t, st.CreateUser(ctx, admin))
		must(t, az.SetGlobalRoles(ctx, admin, true, false))
		cookie, _, err := id.StartSession(ctx, admin, "", "test")
		must(t, err)
		apiToken, _, err := id.CreateToken(ctx, admin, "ci", identity.ScopeRead, 24*time.Hour)
		must(t, err)

		denials := func() int64 {
			n, err := st.CountAuditEvents(ctx, store.AuditFilter{Action: "access.denied"})
			must(t, err)
			return n
		}
		for _, c := range []struct{ name, header, value string }{
			{"no credential", "", ""},
			{"a wrong token", "Authorization", "Bearer scrape-0000000000000000"},
			{"the token without Bearer", "Authorization", token},
			{"the token with another scheme", "Authorization", "Basic " + token},
			{"an admin's API token", "Authorization", "Bearer " + apiToken},
			{"an admin's session", "Cookie", "gantry_session=" + cookie},
		} {
			before := denials()
			var h []string
			if c.header != "" {
				h = []string{c.header, c.value}
			}
			res, body := get(t, srv.URL+"/metrics", h...)
			if res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "gantry_jobs") ||
				!strings.Contains(body, "Authorization: Bearer") || res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("/metrics with %s = %d %q (WWW-Authenticate %q), want 401 saying how to send the token",
					c.name, res.StatusCode, body, res.Header.Get("WWW-Authenticate"))
			}
			if denials() != before+1 {
				t.Errorf("/metrics with %s was refused but not audited as access.denied", c.name)
			}
		}
		res, body := get(t, srv.URL+"/metrics", "Authorization", "Bearer "+token)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `gantry_jobs{state="queued"} 0`) {
			t.Fatalf("/metrics with the token = %d %.200s", res.StatusCode, body)
		}
		events, err := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "access.denied"}, 0, 100)
		must(t, err)
		for _, e := range events {
			if strings.Contains(e.Detail, token) || e.ObjectID != "GET /metrics" {
				t.Errorf("refusal %s %s: %s", e.Action, e.ObjectID, e.Detail)
			}
		}
	})
}
