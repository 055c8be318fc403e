package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// testClock is the settable clock of a test server.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// site is a test server on a bootstrapped database, with services over the same store.
type site struct {
	t        *testing.T
	st       *store.Store
	srv      *httptest.Server
	clock    *testClock
	id       *identity.Service
	az       *authz.Authorizer
	password string // the admin's
}

// newSite starts the site; each configure may change its config, knowing the URL the
// server will answer at (its listener is open before the router is built).
func newSite(t *testing.T, st *store.Store, tls bool, configure ...func(cfg *web.Config, url string)) *site {
	t.Helper()
	s := &site{t: t, st: st, clock: &testClock{t: time.Now().UTC()}}
	opts := identity.Options{BcryptCost: bcrypt.MinCost}
	al := audit.New(st, s.clock.now)
	s.az = authz.New(st, al)
	s.id = identity.New(st, al, s.az, s.clock.now, opts)
	var err error
	if s.password, err = s.id.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewUnstartedServer(nil)
	base := "http://" + s.srv.Listener.Addr().String()
	if tls {
		base = "https://" + s.srv.Listener.Addr().String()
	}
	cfg := web.Config{Store: st, Version: "v0.0.0-test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: opts, Now: s.clock.now}
	for _, f := range configure {
		f(&cfg, base)
	}
	s.srv.Config.Handler = web.NewRouter(cfg)
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
func (s *site) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *s.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf fetches a page and returns the CSRF token of its first form.
func (s *site) csrf(c *http.Client, path string) string {
	s.t.Helper()
	res, body := s.send(c, "GET", path, "", nil)
	m := csrfField.FindStringSubmatch(body)
	if res.StatusCode != 200 || m == nil {
		s.t.Fatalf("GET %s = %d, no CSRF token in %s", path, res.StatusCode, body)
	}
	return m[1]
}

// send makes one request; a body that starts with { is JSON, else a form.
func (s *site) send(c *http.Client, method, path, body string, header map[string]string) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		ct := "application/x-www-form-urlencoded"
		if strings.HasPrefix(body, "{") {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	checkARIA(s.t, res, string(b))
	return res, string(b)
}

// signIn logs a fresh browser in through the login form.
func (s *site) signIn(username, password string) *http.Client {
	s.t.Helper()
	c := s.browser()
	token := s.csrf(c, "/login")
	res, body := s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {username}, "password": {password}}.Encode(), nil)
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("sign in as %s: %d %s", username, res.StatusCode, body)
	}
	return c
}

// denials counts the audited refusals of a route.
func (s *site) denials(route string) int64 {
	n, err := s.st.CountAuditEvents(context.Background(), store.AuditFilter{Action: "access.denied"})
	if err != nil {
		s.t.Fatal(err)
	}
	events, _ := s.st.AuditEventsBefore(context.Background(), store.AuditFilter{Action: "access.denied"}, 0, int(n)+1)
	var count int64
	for _, e := range events {
		if e.ObjectID == route {
			count++
		}
	}
	return count
}

func sessionCookie(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == handlers.SessionCookie {
			return c
		}
	}
	return nil
}

// The login form says what is wrong with what was typed, with the limits it holds to,
// counted in characters as the form's maxlength counts them.
func TestLoginSaysItsLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		c := s.browser()
		token := s.csrf(c, "/login")
		for _, tc := range []struct {
			username, password string
			status             int
			says               string
		}{
			{"", "secret", http.StatusBadRequest, "Enter your username and your password."},
			{"admin", "", http.StatusBadRequest, "Enter your username and your password."},
			{strings.Repeat("a", 65), "secret", http.StatusBadRequest, "A username has at most 64 characters."},
			{"admin", strings.Repeat("x", 129), http.StatusBadRequest, "A password has at most 128 characters."},
			{"admin", strings.Repeat("é", 128), http.StatusUnauthorized, "Wrong username or password."},
		} {
			res, body := s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {tc.username}, "password": {tc.password}}.Encode(), nil)
			if res.StatusCode != tc.status || !strings.Contains(body, `<p class="form-error" role="alert" id="login-error">`+tc.says+`</p>`) {
				t.Errorf("sign in as %.10q… with a password of %d characters = %d, want %d saying %q", tc.username, len([]rune(tc.password)), res.StatusCode, tc.status, tc.says)
			}
		}
	})
}

func TestSignInRedirectsBackAndSignsOut(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		c := s.browser()
		res, _ := s.send(c, "GET", "/?tab=queue", "", nil)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login?next=%2F%3Ftab%3Dqueue" {
			t.Fatalf("anonymous home = %d → %q, want the login page and back", res.StatusCode, res.Header.Get("Location"))
		}
		token := s.csrf(c, "/login?next=%2F%3Ftab%3Dqueue")
		res, body := s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {"admin"}, "password": {"wrong"}, "next": {"/?tab=queue"}}.Encode(), nil)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Wrong username or password.") || sessionCookie(res) != nil {
			t.Fatalf("wrong password = %d, cookie %v", res.StatusCode, sessionCookie(res))
		}
		res, _ = s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {"admin"}, "password": {s.password}, "next": {"/?tab=queue"}}.Encode(), nil)
		sc := sessionCookie(res)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/?tab=queue" || sc == nil {
			t.Fatalf("sign in = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		if !sc.HttpOnly || sc.SameSite != http.SameSiteLaxMode || sc.Secure {
			t.Errorf("session cookie over plain HTTP = %+v, want HttpOnly, SameSite=Lax, not Secure", sc)
		}
		res, body = s.send(c, "GET", "/", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `<a href="/account" aria-label="Your account: admin" title="Your account: admin">admin</a>`) {
			t.Fatalf("home after sign-in = %d", res.StatusCode)
		}
		var me struct {
			Username    string
			GlobalRoles []string `json:"global_roles"`
			Projects    []struct{ Name, Team, Role string }
			Via         string
		}
		res, body = s.send(c, "GET", "/api/v1/me", "", nil)
		if err := json.Unmarshal([]byte(body), &me); err != nil || res.StatusCode != 200 || me.Username != "admin" || me.Via != "session" ||
			len(me.Projects) != 1 || me.Projects[0].Role != models.RoleTeamLead || me.GlobalRoles[0] != "admin" {
			t.Fatalf("me = %d %s", res.StatusCode, body)
		}
		// Signing out needs the session's CSRF token, ends the session and clears the cookie.
		old := sc.Value
		res, _ = s.send(c, "POST", "/logout", "", nil)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("sign out without a CSRF token = %d, want 403", res.StatusCode)
		}
		formToken := s.csrf(c, "/tokens")
		res, _ = s.send(c, "POST", "/logout", url.Values{"csrf_token": {formToken}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login?signed_out=1" {
			t.Fatalf("sign out = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		if sc := sessionCookie(res); sc == nil || sc.MaxAge >= 0 {
			t.Errorf("sign out did not clear the cookie: %v", sc)
		}
		replay := s.browser()
		res, body = s.send(replay, "GET", "/api/v1/me", "", map[string]string{"Cookie": handlers.SessionCookie + "=" + old})
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Not signed in: unknown or ended session. Sign in again at /login.") {
			t.Fatalf("the old cookie after sign-out = %d %s", res.StatusCode, body)
		}
		for _, a := range []string{"login", "login.failed", "logout"} {
			if n, _ := st.CountAuditEvents(context.Background(), store.AuditFilter{Action: a, Actor: "admin"}); n != 1 {
				t.Errorf("%s audited %d times, want once", a, n)
			}
		}
	})
}

func TestLoginRotatesTheSessionAndKeepsRedirectsLocal(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	c := s.signIn("admin", s.password)
	u, _ := url.Parse(s.srv.URL)
	first := c.Jar.Cookies(u)
	// Signing in again from the same browser replaces its session.
	token := s.csrf(c, "/tokens")
	res, _ := s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {"admin"}, "password": {s.password}, "next": {"//evil.example/steal"}}.Encode(), nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("login with next=//evil.example = %d → %q, want /", res.StatusCode, res.Header.Get("Location"))
	}
	second := sessionCookie(res)
	var firstValue string
	for _, ck := range first {
		if ck.Name == handlers.SessionCookie {
			firstValue = ck.Value
		}
	}
	if second == nil || second.Value == firstValue {
		t.Fatal("the session id was not rotated at login")
	}
	res, _ = s.send(s.browser(), "GET", "/api/v1/me", "", map[string]string{"Cookie": handlers.SessionCookie + "=" + firstValue})
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the pre-login session still works: %d", res.StatusCode)
	}
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), true)
	c := s.browser()
	token := s.csrf(c, "/login")
	res, _ := s.send(c, "POST", "/login", url.Values{"csrf_token": {token}, "username": {"admin"}, "password": {s.password}}.Encode(), nil)
	if sc := sessionCookie(res); sc == nil || !sc.Secure || !sc.HttpOnly {
		t.Fatalf("session cookie over TLS = %+v, want Secure and HttpOnly", sc)
	}
}

func TestSessionsEndAfterIdleTime(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	c := s.signIn("admin", s.password)
	s.clock.advance(13 * time.Hour)
	res, _ := s.send(c, "GET", "/tokens", "", nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login?next=") {
		t.Fatalf("a page after 13 idle hours = %d → %q, want the login page", res.StatusCode, res.Header.Get("Location"))
	}
	if s.denials("GET /tokens") != 1 {
		t.Error("the ended session was not audited")
	}
}

func TestTokensPageAndBearerAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		c := s.signIn("admin", s.password)
		token := s.csrf(c, "/tokens")
		res, body := s.send(c, "POST", "/tokens", url.Values{"csrf_token": {token}, "name": {"nightly"}, "scope": {"read"}, "days": {"30"}}.Encode(), nil)
		secret := regexp.MustCompile(`data-testid="token-secret">(gty_[A-Za-z0-9_-]+)<`).FindStringSubmatch(body)
		if res.StatusCode != http.StatusCreated || secret == nil || res.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("create token = %d %s", res.StatusCode, body)
		}
		res, body = s.send(c, "GET", "/tokens", "", nil)
		if strings.Contains(body, secret[1]) || !strings.Contains(body, secret[1][:12]+"…") {
			t.Fatal("the token list must show the prefix and never the secret again")
		}
		api := s.browser()
		bearer := map[string]string{"Authorization": "Bearer " + secret[1]}
		res, body = s.send(api, "GET", "/api/v1/me", "", bearer)
		if res.StatusCode != 200 || !strings.Contains(body, `"via":"token"`) || !strings.Contains(body, `"token_scope":"read"`) {
			t.Fatalf("me with a token = %d %s", res.StatusCode, body)
		}
		res, body = s.send(api, "PUT", "/api/v1/projects/default/members/admin", `{"role": "viewer"}`, bearer)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Fatalf("a read token changing a role = %d %s", res.StatusCode, body)
		}
		res, body = s.send(c, "POST", "/tokens", url.Values{"csrf_token": {token}, "name": {""}, "scope": {"admin"}, "days": {"30"}}.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Name: give the token a name") {
			t.Fatalf("a nameless token = %d", res.StatusCode)
		}
		res, body = s.send(c, "POST", "/tokens", url.Values{"csrf_token": {token}, "name": {"x"}, "scope": {"read"}, "days": {"400"}}.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "a token lives 1 to 365 days") {
			t.Fatalf("a 400-day token = %d", res.StatusCode)
		}
		tokens, _ := st.APITokensOfUser(context.Background(), 1)
		if len(tokens) != 1 {
			t.Fatalf("refused forms created tokens: %d", len(tokens))
		}
		// Another user revoking it is told there is no such token, and the refusal is audited.
		mallory, _ := s.member("mallory")
		revoke := fmt.Sprintf("/tokens/%d/revoke", tokens[0].ID)
		status, _, body := s.post(mallory, "/tokens", revoke, url.Values{})
		_, _, missing := s.post(mallory, "/tokens", "/tokens/999999/revoke", url.Values{})
		if status != http.StatusNotFound || strings.ReplaceAll(body, fmt.Sprintf("no token %d.", tokens[0].ID), "no token N.") != strings.ReplaceAll(missing, "no token 999999.", "no token N.") {
			t.Fatalf("another user revokes the token = %d, want 404 worded as for a token that does not exist", status)
		}
		if s.denials("POST "+revoke) != 1 || s.denials("POST /tokens/999999/revoke") != 0 {
			t.Errorf("refusals audited: %d of another's token (want 1), %d of none (want 0)", s.denials("POST "+revoke), s.denials("POST /tokens/999999/revoke"))
		}
		if res, _ := s.send(api, "GET", "/api/v1/me", "", bearer); res.StatusCode != http.StatusOK {
			t.Fatalf("the token after another user's refused revoke = %d, want still valid", res.StatusCode)
		}
		res, _ = s.send(c, "POST", revoke, url.Values{"csrf_token": {token}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke = %d", res.StatusCode)
		}
		res, body = s.send(api, "GET", "/api/v1/me", "", bearer)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"Not signed in: API token `) || !strings.Contains(body, "was revoked. Create a new API token on your API tokens page (/tokens)") {
			t.Fatalf("a revoked token = %d %s", res.StatusCode, body)
		}
		for _, a := range []string{"token.created", "token.revoked"} {
			if n, _ := st.CountAuditEvents(context.Background(), store.AuditFilter{Action: a, Actor: "admin"}); n != 1 {
				t.Errorf("%s audited %d times", a, n)
			}
		}
	})
}

func TestTokensExpire(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	admin, _ := s.st.UserByUsername(context.Background(), "admin")
	secret, _, err := s.id.CreateToken(context.Background(), admin, "short", identity.ScopeWrite, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.clock.advance(25 * time.Hour)
	res, body := s.send(s.browser(), "GET", "/api/v1/me", "", map[string]string{"Authorization": "Bearer " + secret})
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "expired at") || !strings.Contains(body, "Create a new API token") {
		t.Fatalf("an expired token = %d %s", res.StatusCode, body)
	}
}

// Bad input is refused with a clear message, changes nothing, and the refusal is audited.
func TestBadInputIsRefusedAndAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/tokens")
		// A member of another team, for a POST to a project that is not theirs.
		team := &models.Team{Name: "speech"}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		other := &models.Project{TeamID: team.ID, Name: "asr"}
		if err := st.CreateProject(ctx, other); err != nil {
			t.Fatal(err)
		}
		mallory := &models.User{Username: "mallory"}
		if err := st.CreateUser(ctx, mallory); err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetProjectRole(ctx, mallory, other, models.RoleTeamLead); err != nil {
			t.Fatal(err)
		}
		mallorySecret, _, err := s.id.CreateToken(ctx, mallory, "m", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		anon := s.browser()
		cases := []struct {
			name   string
			client *http.Client
			method string
			path   string
			body   string
			header map[string]string
			status int
			want   string
		}{
			{"login without CSRF", anon, "POST", "/login", url.Values{"username": {"admin"}, "password": {s.password}}.Encode(), nil, 403, "security token is missing"},
			{"form without CSRF", admin, "POST", "/tokens", url.Values{"name": {"x"}, "scope": {"write"}, "days": {"9"}}.Encode(), nil, 403, "security token is missing"},
			{"form with a forged CSRF token", admin, "POST", "/tokens", url.Values{"csrf_token": {"forged"}, "name": {"x"}, "scope": {"write"}, "days": {"9"}}.Encode(), nil, 403, "out of date"},
			{"oversized form", admin, "POST", "/tokens", "csrf_token=" + token + "&name=" + strings.Repeat("x", 2<<20), nil, 400, "The form is larger than 1024 KiB"},
			{"malformed form", admin, "POST", "/tokens", "csrf_token=%zz&name=x", nil, 400, "The form could not be read"},
			{"tampered session cookie", anon, "GET", "/api/v1/me", "", map[string]string{"Cookie": handlers.SessionCookie + "=" + strings.Repeat("A", 43)}, 401, "unknown or ended session"},
			{"malformed session cookie", anon, "GET", "/api/v1/me", "", map[string]string{"Cookie": handlers.SessionCookie + "=../../etc/passwd"}, 401, "malformed session cookie"},
			{"forged API token", anon, "GET", "/api/v1/me", "", map[string]string{"Authorization": "Bearer gty_" + strings.Repeat("B", 43)}, 401, "unknown API token"},
			{"not a Gantry token", anon, "GET", "/api/v1/me", "", map[string]string{"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."}, 401, "not a Gantry API token"},
			{"not a bearer", anon, "GET", "/api/v1/me", "", map[string]string{"Authorization": "Basic YWRtaW46YWRtaW4="}, 401, "must be Bearer"},
			{"anonymous API call", anon, "GET", "/api/v1/me", "", nil, 401, "Sign in first, or send an API token"},
			{"POST to another project", anon, "PUT", "/api/v1/projects/default/members/mallory", `{"role": "team-lead"}`, map[string]string{"Authorization": "Bearer " + mallorySecret}, 403, "You may not manage the members of project default: you have no role in it. Ask a team lead of project default or a Gantry admin for the team-lead role."},
			{"unknown project", anon, "GET", "/api/v1/projects/nope/members", "", map[string]string{"Authorization": "Bearer " + mallorySecret}, 404, `there is no project \"nope\"`},
			{"malformed JSON", anon, "PUT", "/api/v1/projects/asr/members/mallory", `{"role":`, map[string]string{"Authorization": "Bearer " + mallorySecret}, 400, `"field":"body"`},
			{"role not a string", anon, "PUT", "/api/v1/projects/asr/members/mallory", `{"role": 1}`, map[string]string{"Authorization": "Bearer " + mallorySecret}, 400, `{"code":"invalid","message":"must be a string, not number","field":"role"}`},
			{"unknown field", anon, "PUT", "/api/v1/projects/asr/members/mallory", `{"role": "viewer", "rol": "team-lead"}`, map[string]string{"Authorization": "Bearer " + mallorySecret}, 400, `"field":"rol"`},
			{"unknown role", anon, "PUT", "/api/v1/projects/asr/members/mallory", `{"role": "owner"}`, map[string]string{"Authorization": "Bearer " + mallorySecret}, 400, `\"owner\" is not a project role`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				route := tc.method + " " + strings.SplitN(tc.path, "?", 2)[0]
				before := s.denials(route)
				events, _ := st.CountAuditEvents(ctx, store.AuditFilter{})
				res, body := s.send(tc.client, tc.method, tc.path, tc.body, tc.header)
				if res.StatusCode != tc.status || !strings.Contains(body, tc.want) {
					t.Fatalf("%s %s = %d %.300s; want %d saying %q", tc.method, tc.path, res.StatusCode, body, tc.status, tc.want)
				}
				after, _ := st.CountAuditEvents(ctx, store.AuditFilter{})
				switch {
				case tc.status == 400 && tc.want != "The form is larger than 1024 KiB" && tc.want != "The form could not be read":
					// The handler's own validation: nothing changed, nothing to audit.
					if after != events {
						t.Errorf("refused input appended %d audit events", after-events)
					}
				case tc.status == 404:
				default:
					if s.denials(route) != before+1 {
						t.Errorf("the refusal was not audited")
					}
				}
			})
		}
		if tokens, _ := st.APITokensOfUser(ctx, 1); len(tokens) != 0 {
			t.Errorf("refused requests created %d tokens", len(tokens))
		}
		if _, err := st.MembershipOf(ctx, mallory.ID, 1); err == nil {
			t.Error("mallory got into the default project")
		}
		// The refusal of the foreign POST names the project it was about.
		page, _ := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "access.denied", Actor: "mallory"}, 0, 1)
		if len(page) != 1 || page[0].ProjectID == nil || *page[0].ProjectID != 1 || page[0].ActorType != models.ActorToken {
			t.Errorf("the foreign POST was audited as %+v", page)
		}
	})
}

func TestTeamLeadGrantsRolesThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ctx := context.Background()
	ada := &models.User{Username: "ada"}
	if err := s.st.CreateUser(ctx, ada); err != nil {
		t.Fatal(err)
	}
	admin, _ := s.st.UserByUsername(ctx, "admin")
	secret, _, _ := s.id.CreateToken(ctx, admin, "ops", identity.ScopeWrite, 24*time.Hour)
	bearer := map[string]string{"Authorization": "Bearer " + secret}
	api := s.browser()
	res, body := s.send(api, "PUT", "/api/v1/projects/default/members/ada", `{"role": "member"}`, bearer)
	if res.StatusCode != 200 || !strings.Contains(body, `"role":"member"`) {
		t.Fatalf("grant = %d %s", res.StatusCode, body)
	}
	res, body = s.send(api, "GET", "/api/v1/projects/default/members", "", bearer)
	if res.StatusCode != 200 || !strings.Contains(body, `{"username":"ada","display_name":"","role":"member"}`) {
		t.Fatalf("members = %d %s", res.StatusCode, body)
	}
	res, _ = s.send(api, "DELETE", "/api/v1/projects/default/members/ada", "", bearer)
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("remove = %d", res.StatusCode)
	}
	res, _ = s.send(api, "DELETE", "/api/v1/projects/default/members/ada", "", bearer)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("remove a non-member = %d", res.StatusCode)
	}
	for _, a := range []string{"role.granted", "role.revoked"} {
		events, _ := s.st.AuditEventsBefore(ctx, store.AuditFilter{Action: a, Actor: "admin"}, 0, 5)
		if len(events) != 1 || events[0].ActorType != models.ActorToken || !strings.Contains(events[0].Detail, `"user":"ada"`) {
			t.Errorf("%s audited as %+v", a, events)
		}
	}
}
