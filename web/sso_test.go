package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
	"golang.org/x/text/language"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// The OpenID Provider of these tests is zitadel's op package on loopback, with its example
// storage and login form: real authorization requests, PKCE, signed ID tokens, userinfo,
// one-time codes and an end-session endpoint.

// opUsers is the provider's user directory.
type opUsers map[string]*storage.User

func (u opUsers) GetUserByID(id string) *storage.User { return u[id] }

func (u opUsers) GetUserByUsername(name string) *storage.User {
	for _, user := range u {
		if user.Username == name {
			return user
		}
	}
	return nil
}

func (u opUsers) ExampleClientID() string { return "service" }

// opStorage adds a groups claim to ID tokens when the groups scope is asked for, as
// Keycloak and Okta do.
type opStorage struct {
	*storage.Storage
	groups map[string][]string // by user id
}

func (s *opStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	if slices.Contains(scopes, "groups") {
		info.AppendClaims("groups", s.groups[req.GetSubject()])
	}
	return nil
}

func (s *opStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return groupsClient{c}, nil
}

type groupsClient struct{ op.Client }

func (c groupsClient) IsScopeAllowed(scope string) bool {
	return scope == "groups" || c.Client.IsScopeAllowed(scope)
}

// provider is a running OpenID Provider.
type provider struct {
	srv    *httptest.Server
	issuer string
}

const otherRedirect = "http://127.0.0.1:9/callback"

func newProvider(t *testing.T, gantryCallback string) *provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	users := opUsers{
		"u-ada":   {ID: "u-ada", Username: "ada", Password: "pw-ada", FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com", EmailVerified: true, PreferredLanguage: language.English},
		"u-carol": {ID: "u-carol", Username: "carol", Password: "pw-carol", FirstName: "Carol", LastName: "Shaw", Email: "carol@example.com", EmailVerified: true, PreferredLanguage: language.English},
	}
	clients := map[string]*storage.Client{
		"gantry": storage.WebClient("gantry", "s3cret", gantryCallback),
		"other":  storage.WebClient("other", "0ther", otherRedirect),
	}
	st := &opStorage{Storage: storage.NewStorageWithClients(users, clients), groups: map[string][]string{
		"u-ada": {"ml-team"}, "u-carol": {"platform-auditors", "ml-team"},
	}}
	// The example server logs every request through the default logger: quiet it.
	srv.Config.Handler = exampleop.SetupServer(issuer, st, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	srv.Start()
	t.Cleanup(srv.Close)
	return &provider{srv: srv, issuer: issuer}
}

// swapper stands between Gantry and the provider's token endpoint; when armed it replaces
// the ID token in the next answer with another real, signed one.
type swapper struct {
	mu      sync.Mutex
	idToken string
}

func (s *swapper) arm(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idToken = token
}

func (s *swapper) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	s.mu.Lock()
	replace := s.idToken
	s.idToken = ""
	s.mu.Unlock()
	if err != nil || replace == "" || !strings.HasSuffix(req.URL.Path, "/oauth/token") {
		if replace != "" {
			s.arm(replace)
		}
		return res, err
	}
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return nil, err
	}
	res.Body.Close()
	body["id_token"] = replace
	b, _ := json.Marshal(body)
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	res.ContentLength = int64(len(b))
	res.Header.Del("Content-Length")
	return res, nil
}

// ssoSite is Gantry configured for a provider.
type ssoSite struct {
	*site
	op   *provider
	swap *swapper
}

func newSSOSite(t *testing.T, st *store.Store) *ssoSite {
	t.Helper()
	gantry := httptest.NewUnstartedServer(nil)
	base := "http://" + gantry.Listener.Addr().String()
	p := newProvider(t, base+"/auth/oidc/callback")
	swap := &swapper{}
	o, err := identity.NewOIDC(identity.OIDCConfig{
		Issuer: p.issuer, ClientID: "gantry", ClientSecret: "s3cret", RedirectURL: base + "/auth/oidc/callback",
		Scopes: []string{"openid", "profile", "email", "groups"}, HTTPClient: &http.Client{Transport: swap, Timeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{t: t, st: st, clock: &testClock{t: time.Now().UTC()}}
	opts := identity.Options{BcryptCost: bcrypt.MinCost, OIDC: o}
	al := audit.New(st, s.clock.now)
	s.az = authz.New(st, al)
	s.id = identity.New(st, al, s.az, s.clock.now, opts)
	gantry.Config.Handler = web.NewRouter(web.Config{Store: st, Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: opts, Now: s.clock.now})
	gantry.Start()
	t.Cleanup(gantry.Close)
	s.srv = gantry
	ctx := context.Background()
	project, err := st.ProjectByName(ctx, "default")
	if err != nil {
		// The sites of these tests start on an empty database: make what bootstrap would.
		team := &models.Team{Name: "default"}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		project = &models.Project{TeamID: team.ID, Name: "default"}
		if err := st.CreateProject(ctx, project); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*models.GroupMapping{
		{Group: "ml-team", ProjectID: &project.ID, Role: models.RoleMember},
		{Group: "platform-auditors", Role: models.RoleAuditor},
	} {
		if err := st.CreateGroupMapping(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	return &ssoSite{site: s, op: p, swap: swap}
}

var opLoginForm = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signInAt walks a browser through the redirects from start, filling the provider's login
// form with username and password, until stop says to halt at a URL (nil: to the end). It
// returns the last response and the URL it came from.
func signInAt(t *testing.T, c *http.Client, start, username, password string, stop func(*url.URL) bool) (*http.Response, *url.URL) {
	t.Helper()
	next, _ := url.Parse(start)
	req, _ := http.NewRequest("GET", next.String(), nil)
	for range 20 {
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(strings.NewReader(string(body)))
		if loc := res.Header.Get("Location"); res.StatusCode >= 300 && res.StatusCode < 400 && loc != "" {
			u, err := req.URL.Parse(loc)
			if err != nil {
				t.Fatal(err)
			}
			if stop != nil && stop(u) {
				return res, u
			}
			req, _ = http.NewRequest("GET", u.String(), nil)
			continue
		}
		if m := opLoginForm.FindStringSubmatch(string(body)); m != nil && strings.Contains(string(body), `action="/login/username"`) {
			form := url.Values{"id": {m[1]}, "username": {username}, "password": {password}}
			u, _ := req.URL.Parse("/login/username")
			req, _ = http.NewRequest("POST", u.String(), strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			continue
		}
		return res, req.URL
	}
	t.Fatal("too many redirects")
	return nil, nil
}

func newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func isCallback(u *url.URL) bool { return u.Path == "/auth/oidc/callback" }

// pastCallback stops a sign-in where Gantry's callback sends the browser on.
func (s *ssoSite) pastCallback(u *url.URL) bool {
	return strings.HasPrefix(u.String(), s.srv.URL) && !isCallback(u) && !strings.HasPrefix(u.Path, "/auth/oidc/")
}

// foreignToken signs in at p as a plain OAuth client "other" and returns its ID token.
func foreignToken(t *testing.T, p *provider, username, password string) string {
	t.Helper()
	cfg := &oauth2.Config{ClientID: "other", ClientSecret: "0ther", RedirectURL: otherRedirect, Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: p.issuer + "/auth", TokenURL: p.issuer + "/oauth/token"}}
	_, u := signInAt(t, newBrowser(), cfg.AuthCodeURL("st", oauth2.SetAuthURLParam("nonce", "n")), username, password,
		func(u *url.URL) bool { return strings.HasPrefix(u.String(), otherRedirect) })
	tok, err := cfg.Exchange(context.Background(), u.Query().Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("the other client got no ID token")
	}
	return raw
}

func (s *ssoSite) me(c *http.Client) (int, map[string]any) {
	res, body := s.send(c, "GET", "/api/v1/me", "", nil)
	var v map[string]any
	json.Unmarshal([]byte(body), &v)
	return res.StatusCode, v
}

func TestSSOSignsInThroughTheProvider(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newSSOSite(t, st)
		c := newBrowser()
		// The authorization request carries PKCE (S256), state and nonce.
		res, _ := s.send(c, "GET", "/auth/oidc/login?next=%2Ftokens", "", nil)
		auth, err := url.Parse(res.Header.Get("Location"))
		if err != nil || res.StatusCode != http.StatusFound || !strings.HasPrefix(auth.String(), s.op.issuer+"/auth?") {
			t.Fatalf("SSO start = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		q := auth.Query()
		if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) < 43 || q.Get("state") == "" || q.Get("nonce") == "" ||
			q.Get("client_id") != "gantry" || !strings.Contains(q.Get("scope"), "groups") {
			t.Fatalf("authorization request lacks PKCE, state or nonce: %v", q)
		}
		res, _ = signInAt(t, c, auth.String(), "ada", "pw-ada", s.pastCallback)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/tokens" || sessionCookie(res) == nil {
			t.Fatalf("callback = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		status, me := s.me(c)
		if status != 200 || me["username"] != "ada" || me["email"] != "ada@example.com" || me["sso"] != true || me["display_name"] != "Ada Lovelace" {
			t.Fatalf("me after SSO = %d %v", status, me)
		}
		if projects, _ := me["projects"].([]any); len(projects) != 1 || projects[0].(map[string]any)["role"] != models.RoleMember {
			t.Fatalf("the ml-team group did not make ada a member of default: %v", me["projects"])
		}
		ada, err := st.UserByUsernameWithPassword(ctx, "ada")
		if err != nil || ada.Issuer != s.op.issuer || ada.Subject != "u-ada" || ada.PasswordHash != "" {
			t.Fatalf("provisioned user = %+v, %v", ada, err)
		}
		// A second sign-in finds the same user; a role granted by hand above the group's stays.
		project, _ := st.ProjectByName(ctx, "default")
		if err := s.az.SetProjectRole(ctx, ada, project, models.RoleTeamLead); err != nil {
			t.Fatal(err)
		}
		c2 := newBrowser()
		res, _ = signInAt(t, c2, s.srv.URL+"/auth/oidc/login", "ada", "pw-ada", s.pastCallback)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("second sign-in = %d", res.StatusCode)
		}
		if n, _ := s.st.CountUsers(ctx); n != 1 {
			t.Fatalf("users after two sign-ins = %d, want 1", n)
		}
		if m, _ := st.MembershipOf(ctx, ada.ID, project.ID); m.Role != models.RoleTeamLead {
			t.Fatalf("the group mapping lowered a hand-granted role to %s", m.Role)
		}
		// Carol's groups make her an auditor platform-wide, and a viewer in every project
		// of team research that is not archived.
		research := &models.Team{Name: "research"}
		if err := st.CreateTeam(ctx, research); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*models.Project{{TeamID: research.ID, Name: "lm"}, {TeamID: research.ID, Name: "vision"}, {TeamID: research.ID, Name: "old", Archived: true}} {
			if err := st.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CreateGroupMapping(ctx, &models.GroupMapping{Group: "platform-auditors", TeamID: &research.ID, Role: models.RoleViewer}); err != nil {
			t.Fatal(err)
		}
		res, _ = signInAt(t, newBrowser(), s.srv.URL+"/auth/oidc/login", "carol", "pw-carol", s.pastCallback)
		carol, _ := st.UserByUsername(ctx, "carol")
		if res.StatusCode != http.StatusSeeOther || carol == nil || !carol.IsAuditor {
			t.Fatalf("carol = %d %+v, want an auditor", res.StatusCode, carol)
		}
		roles, _ := st.ProjectRolesOfUser(ctx, carol.ID)
		var got []string
		for _, r := range roles {
			got = append(got, r.Project+":"+r.Role)
		}
		if strings.Join(got, ",") != "default:member,lm:viewer,vision:viewer" {
			t.Errorf("carol's project roles = %v, want member of default and viewer of research's live projects", got)
		}
		// Signing out ends the Gantry session and sends the browser to the provider's end-session endpoint.
		token := s.csrf(c, "/tokens")
		res, _ = s.send(c, "POST", "/logout", url.Values{"csrf_token": {token}}.Encode(), nil)
		var discovery struct {
			EndSession string `json:"end_session_endpoint"`
		}
		dres, err := http.Get(s.op.issuer + "/.well-known/openid-configuration")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(dres.Body).Decode(&discovery)
		dres.Body.Close()
		end, _ := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || discovery.EndSession == "" || !strings.HasPrefix(end.String(), discovery.EndSession+"?") ||
			end.Query().Get("client_id") != "gantry" || end.Query().Get("post_logout_redirect_uri") != s.srv.URL+"/login?signed_out=1" {
			t.Fatalf("SSO sign-out = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		if status, _ := s.me(c); status != http.StatusUnauthorized {
			t.Fatalf("me after sign-out = %d", status)
		}
		for _, a := range []struct {
			action, actor string
			n             int64
		}{{"user.created", "ada", 1}, {"login", "ada", 2}, {"role.granted", "ada", 1}, {"logout", "ada", 1}, {"user.created", "carol", 1}} {
			if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{Action: a.action, Actor: a.actor}); n != a.n {
				t.Errorf("%s by %s audited %d times, want %d", a.action, a.actor, n, a.n)
			}
		}
	})
}

// Every way a sign-in can be wrong is refused: no session, a clear page, and an audit record.
func TestSSORefusesBadSignIns(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	ctx := context.Background()
	s := newSSOSite(t, st)
	stranger := newProvider(t, s.srv.URL+"/auth/oidc/callback")

	refused := func(t *testing.T, c *http.Client, res *http.Response, status int, want string) {
		t.Helper()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != status || !strings.Contains(string(body), want) || sessionCookie(res) != nil {
			t.Fatalf("= %d %q, want %d saying %q and no session", res.StatusCode, regexp.MustCompile(`<main.*</main>`).FindString(string(body)), status, want)
		}
		if code, _ := s.me(c); code != http.StatusUnauthorized {
			t.Fatalf("the browser is signed in after a refused sign-in: %d", code)
		}
	}
	// upToCallback runs a sign-in as ada and stops before Gantry's callback.
	upToCallback := func(t *testing.T) (*http.Client, *url.URL) {
		c := newBrowser()
		_, cb := signInAt(t, c, s.srv.URL+"/auth/oidc/login", "ada", "pw-ada", isCallback)
		return c, cb
	}
	callback := func(t *testing.T, c *http.Client, u *url.URL) *http.Response {
		res, err := c.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("wrong state", func(t *testing.T) {
		c, cb := upToCallback(t)
		q := cb.Query()
		q.Set("state", "forged-"+q.Get("state"))
		cb.RawQuery = q.Encode()
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, "does not match this browser")
	})
	t.Run("replayed code", func(t *testing.T) {
		c, cb := upToCallback(t)
		u, _ := url.Parse(s.srv.URL)
		flow := c.Jar.Cookies(u)
		if res := callback(t, c, cb); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("first use of the code = %d", res.StatusCode)
		}
		replay := newBrowser()
		replay.Jar.SetCookies(u, flow)
		refused(t, replay, callback(t, replay, cb), http.StatusUnauthorized, "the provider refused the authorization code")
	})
	t.Run("expired token", func(t *testing.T) {
		// Gantry's clock runs past the ID token's one-hour life; the flow itself is fresh.
		s.clock.advance(61 * time.Minute)
		defer s.clock.advance(-61 * time.Minute)
		c, cb := upToCallback(t)
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, "token is expired")
	})
	t.Run("wrong audience", func(t *testing.T) {
		c, cb := upToCallback(t)
		s.swap.arm(foreignToken(t, s.op, "ada", "pw-ada"))
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, `expected audience &#34;gantry&#34;`)
	})
	t.Run("unknown issuer", func(t *testing.T) {
		c, cb := upToCallback(t)
		s.swap.arm(foreignToken(t, stranger, "ada", "pw-ada"))
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, "the ID token is not valid")
	})
	t.Run("provider says no", func(t *testing.T) {
		c, cb := upToCallback(t)
		cb.RawQuery = url.Values{"error": {"access_denied"}, "error_description": {"user cancelled"}, "state": {cb.Query().Get("state")}}.Encode()
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, "the provider answered access_denied user cancelled")
	})
	t.Run("no flow cookie", func(t *testing.T) {
		_, cb := upToCallback(t)
		c := newBrowser()
		refused(t, c, callback(t, c, cb), http.StatusUnauthorized, "no sign-in in progress")
	})
	t.Run("disabled user", func(t *testing.T) {
		c, cb := upToCallback(t)
		if res := callback(t, c, cb); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("first sign-in = %d", res.StatusCode)
		}
		ada, _ := st.UserByUsername(ctx, "ada")
		ada.Disabled = true
		if err := st.UpdateUser(ctx, ada); err != nil {
			t.Fatal(err)
		}
		// The session of a disabled user stops at once, and a new sign-in is refused.
		if code, _ := s.me(c); code != http.StatusUnauthorized {
			t.Fatalf("a disabled user's session still works: %d", code)
		}
		c2, cb2 := upToCallback(t)
		refused(t, c2, callback(t, c2, cb2), http.StatusForbidden, "Your Gantry account is disabled")
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{Action: identity.ActionLoginRefused, Actor: "ada"}); n != 1 {
			t.Errorf("the disabled user's sign-in was audited %d times", n)
		}
	})
	failed, err := st.AuditEventsBefore(ctx, store.AuditFilter{Action: identity.ActionLoginFailed}, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range failed {
		reasons = append(reasons, e.Detail)
	}
	if len(failed) != 7 {
		t.Errorf("failed sign-ins audited: %d, want 7: %v", len(failed), reasons)
	}
	for _, e := range failed {
		if !strings.Contains(e.Detail, `"method":"oidc"`) || e.SourceIP == "" {
			t.Errorf("failed sign-in audited as %+v", e)
		}
	}
	if n, _ := st.CountUsers(ctx); n != 1 {
		t.Errorf("refused sign-ins created users: %d", n)
	}
}

// The journey of the issue: a new user signs in through the provider and lands in their
// project, cannot touch another team's, an admin grants them a role, and every step is on
// the audit page.
func TestNewSSOUserJourneyIsAudited(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	ctx := context.Background()
	s := newSSOSite(t, st)
	team := &models.Team{Name: "speech"}
	if err := st.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "asr"}); err != nil {
		t.Fatal(err)
	}
	ada := newBrowser()
	if res, _ := signInAt(t, ada, s.srv.URL+"/auth/oidc/login", "ada", "pw-ada", s.pastCallback); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("SSO = %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, body := s.send(ada, "GET", "/api/v1/projects/default/members", "", nil); res.StatusCode != 200 || !strings.Contains(body, `"username":"ada"`) {
		t.Fatalf("ada in her own project = %d %s", res.StatusCode, body)
	}
	if res, _ := s.send(ada, "GET", "/api/v1/projects/asr/members", "", nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("ada in another team's project = %d", res.StatusCode)
	}
	// An admin grants ada a role in asr.
	root := &models.User{Username: "root"}
	if err := st.CreateUser(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := s.az.SetGlobalRoles(ctx, root, true, false); err != nil {
		t.Fatal(err)
	}
	cookie, sess, err := s.id.StartSession(ctx, root, "", "")
	if err != nil {
		t.Fatal(err)
	}
	admin := map[string]string{"Cookie": "gantry_session=" + cookie, "X-CSRF-Token": sess.CSRFToken}
	if res, body := s.send(newBrowser(), "PUT", "/api/v1/projects/asr/members/ada", `{"role": "viewer"}`, admin); res.StatusCode != 200 {
		t.Fatalf("grant = %d %s", res.StatusCode, body)
	}
	if res, _ := s.send(ada, "GET", "/api/v1/projects/asr/members", "", nil); res.StatusCode != 200 {
		t.Fatalf("ada after the grant = %d", res.StatusCode)
	}
	_, body := s.send(newBrowser(), "GET", "/admin/audit?actor=ada", "", admin)
	for _, action := range []string{"user.created", "role.granted", "login", "access.denied"} {
		if !strings.Contains(body, "<code>"+action+"</code>") {
			t.Errorf("ada's %s is not on the audit page", action)
		}
	}
	if _, body := s.send(newBrowser(), "GET", "/admin/audit?actor=root&action=role.granted", "", admin); !strings.Contains(body, "user ada") {
		t.Error("the admin's grant is not on the audit page")
	}
}
