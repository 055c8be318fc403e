package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Roles of the matrix. "outsider" is signed in with no role anywhere.
const (
	anonymous = "anonymous"
	outsider  = "outsider"
)

var matrixRoles = []string{anonymous, models.RoleAdmin, models.RoleAuditor, models.RoleTeamLead, models.RoleMember, models.RoleViewer, outsider}

// expected is who may pass each permission, written out by hand (not derived from the
// policy under test): the roles allowed in their own project, and in a foreign one.
// Platform-wide permissions use own only. A rule not listed here fails the test.
var expected = map[string]struct{ own, foreign []string }{
	"project:read":    {own: []string{models.RoleAdmin, models.RoleAuditor, models.RoleTeamLead, models.RoleMember, models.RoleViewer}, foreign: []string{models.RoleAdmin, models.RoleAuditor}},
	"project:manage":  {own: []string{models.RoleAdmin, models.RoleTeamLead}, foreign: []string{models.RoleAdmin}},
	"jobs:read":       {own: []string{models.RoleAdmin, models.RoleAuditor, models.RoleTeamLead, models.RoleMember, models.RoleViewer}, foreign: []string{models.RoleAdmin, models.RoleAuditor}},
	"jobs:write":      {own: []string{models.RoleAdmin, models.RoleTeamLead, models.RoleMember}, foreign: []string{models.RoleAdmin}},
	"cost:read":       {own: []string{models.RoleAdmin, models.RoleAuditor, models.RoleTeamLead, models.RoleMember, models.RoleViewer}, foreign: []string{models.RoleAdmin, models.RoleAuditor}},
	"audit:read":      {own: []string{models.RoleAdmin, models.RoleAuditor}},
	"platform:read":   {own: []string{models.RoleAdmin, models.RoleAuditor}},
	"platform:write":  {own: []string{models.RoleAdmin}},
	"platform:manage": {own: []string{models.RoleAdmin}},
}

// matrix is the world the matrix test runs in.
type matrix struct {
	t        *testing.T
	st       *store.Store
	id       *identity.Service
	az       *authz.Authorizer
	srv      *httptest.Server
	users    map[string]*models.User
	projects map[bool]*models.Project // own (true) and foreign (false)
	jobs     map[bool]*models.Job
}

func newMatrix(t *testing.T) *matrix {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	al := audit.New(st, time.Now)
	az := authz.New(st, al)
	opts := identity.Options{BcryptCost: bcrypt.MinCost}
	m := &matrix{t: t, st: st, id: identity.New(st, al, az, time.Now, opts), az: az, users: map[string]*models.User{},
		projects: map[bool]*models.Project{}, jobs: map[bool]*models.Job{}}
	for own, team := range map[bool]string{true: "vision", false: "speech"} {
		tm := &models.Team{Name: team}
		if err := st.CreateTeam(ctx, tm); err != nil {
			t.Fatal(err)
		}
		p := &models.Project{TeamID: tm.ID, Name: team + "-main"}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		m.projects[own] = p
	}
	for _, role := range append(matrixRoles[1:], "target") {
		u := &models.User{Username: role + "-user"}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		m.users[role] = u
		var err error
		switch role {
		case models.RoleAdmin, models.RoleAuditor:
			err = az.SetGlobalRoles(ctx, u, role == models.RoleAdmin, role == models.RoleAuditor)
		case models.RoleTeamLead, models.RoleMember, models.RoleViewer, "target":
			r := role
			if role == "target" {
				r = models.RoleViewer
			}
			err = az.SetProjectRole(ctx, u, m.projects[true], r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for own, p := range m.projects {
		j := &models.Job{Name: "job-" + p.Name, ProjectID: p.ID, UserID: m.users[models.RoleMember].ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "research"}
		if err := st.CreateJob(ctx, j, "matrix"); err != nil {
			t.Fatal(err)
		}
		m.jobs[own] = j
	}
	disp, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: al, Now: time.Now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	m.srv = httptest.NewServer(NewRouter(Config{Store: st, Version: "test", Log: log, Dispatch: disp, Auth: opts}))
	t.Cleanup(m.srv.Close)
	return m
}

// denials counts the access.denied events of the audit log.
func (m *matrix) denials() int64 {
	n, err := m.st.CountAuditEvents(context.Background(), store.AuditFilter{Action: "access.denied"})
	if err != nil {
		m.t.Fatal(err)
	}
	return n
}

var pathParam = regexp.MustCompile(`:[a-z]+`)

// fill puts values into a route's path parameters, for the own or a foreign project.
func (m *matrix) fill(path string, own bool) string {
	return pathParam.ReplaceAllStringFunc(path, func(p string) string {
		switch p {
		case ":project":
			return m.projects[own].Name
		case ":id":
			if strings.HasPrefix(path, "/api/v1/jobs/") || strings.HasPrefix(path, "/jobs/") {
				return fmt.Sprint(m.jobs[own].ID)
			}
			return "1"
		case ":name":
			return "no-such-image"
		case ":user":
			return m.users["target"].Username
		case ":team":
			return "vision"
		}
		m.t.Fatalf("the matrix test does not know how to fill %s in %s: teach it in fill", p, path)
		return ""
	})
}

// body is what a state-changing request sends: enough for the gate to find its project.
func (m *matrix) body(r route, own bool) string {
	switch {
	case r.access.project == fromBody:
		return fmt.Sprintf(`{"project": %q, "name": "m", "command": ["true"]}`, m.projects[own].Name)
	case strings.Contains(r.path, "/members/"):
		return `{"role": "viewer"}`
	}
	return ""
}

// do sends r as role: pages with a session cookie (and its CSRF token), the API with a
// write-scoped token, anonymous requests with the login form's double-submit token.
func (m *matrix) do(r route, role string, own bool) *http.Response {
	ctx := context.Background()
	body := m.body(r, own)
	req, err := http.NewRequest(r.method, m.srv.URL+m.fill(r.path, own), strings.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	api := strings.HasPrefix(r.path, "/api/")
	switch {
	case role == anonymous:
		req.AddCookie(&http.Cookie{Name: handlers.LoginCSRFCookie, Value: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
		req.Header.Set("X-CSRF-Token", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	case api && r.access.kind != agent:
		secret, _, err := m.id.CreateToken(ctx, m.users[role], "matrix", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			m.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret)
	default:
		cookie, sess, err := m.id.StartSession(ctx, m.users[role], "", "matrix")
		if err != nil {
			m.t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: handlers.SessionCookie, Value: cookie})
		req.Header.Set("X-CSRF-Token", sess.CSRFToken)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// routeAccess is the access each route must have, written out by hand: "public", "agent",
// "job-token", "scrape", "signed-in", or a permission. A route missing here fails the test: say who may call it.
var routeAccess = map[string]string{
	"GET /healthz":                                     "public",
	"GET /readyz":                                      "public",
	"GET /login":                                       "public",
	"POST /login":                                      "public",
	"GET /auth/oidc/login":                             "public",
	"GET /auth/oidc/callback":                          "public",
	"GET /metrics":                                     "scrape",
	"GET /":                                            "signed-in",
	"POST /logout":                                     "signed-in",
	"GET /tokens":                                      "signed-in",
	"POST /tokens":                                     "signed-in",
	"POST /tokens/:id/revoke":                          "signed-in",
	"GET /account":                                     "signed-in",
	"POST /account":                                    "signed-in",
	"GET /cost":                                        "signed-in",
	"GET /cost.csv":                                    "signed-in",
	"GET /api/v1/cost":                                 "signed-in",
	"POST /api/v1/usage":                               "platform:write",
	"GET /alerts":                                      "signed-in",
	"GET /alerts/:id":                                  "signed-in",
	"POST /alerts/:id/acknowledge":                     "signed-in",
	"POST /alerts/:id/silence":                         "signed-in",
	"POST /alerts/:id/resolve":                         "signed-in",
	"POST /alerts/:id/revert":                          "signed-in",
	"GET /admin/cost/rates":                            "platform:read",
	"POST /admin/cost/rates":                           "platform:write",
	"POST /admin/cost/rates/:id/delete":                "platform:write",
	"POST /admin/cost/currency":                        "platform:write",
	"GET /admin/cost/budgets":                          "platform:read",
	"POST /admin/cost/budgets":                         "platform:write",
	"POST /admin/cost/budgets/:id":                     "platform:write",
	"POST /admin/cost/budgets/:id/delete":              "platform:write",
	"GET /admin/cost/rules":                            "platform:read",
	"POST /admin/cost/rules":                           "platform:write",
	"GET /admin/cost/rules/:id":                        "platform:read",
	"POST /admin/cost/rules/:id":                       "platform:write",
	"POST /admin/cost/evaluate":                        "platform:write",
	"GET /admin/cost/channels":                         "platform:read",
	"POST /admin/cost/channels":                        "platform:write",
	"POST /admin/cost/channels/:id":                    "platform:write",
	"GET /api/v1/me":                                   "signed-in",
	"GET /api/v1/openapi.json":                         "public",
	"GET /jobs":                                        "signed-in",
	"GET /images":                                      "signed-in",
	"GET /api/v1/images":                               "signed-in",
	"POST /admin/images":                               "platform:write",
	"POST /api/v1/images":                              "platform:write",
	"POST /api/v1/images/:name/status":                 "platform:write",
	"POST /admin/images/:name/status":                  "platform:write",
	"POST /admin/images/:name/prepull":                 "platform:write",
	"GET /feedback":                                    "signed-in",
	"POST /feedback":                                   "signed-in",
	"GET /feedback/:id":                                "signed-in",
	"POST /feedback/:id/vote":                          "signed-in",
	"POST /feedback/:id/comments":                      "signed-in",
	"POST /feedback/:id/answer":                        "platform:write",
	"GET /admin/feedback.csv":                          "platform:read",
	"GET /admin/audit":                                 "audit:read",
	"GET /admin/audit/export":                          "audit:read",
	"GET /api/v1/jobs":                                 "signed-in",
	"GET /cluster":                                     "signed-in",
	"GET /jobs/new":                                    "signed-in",
	"POST /jobs/new":                                   "signed-in",
	"POST /jobs":                                       "jobs:write",
	"GET /jobs/:id":                                    "jobs:read",
	"GET /jobs/:id/logs/stream":                        "jobs:read",
	"POST /jobs/:id/cancel":                            "jobs:write",
	"POST /jobs/:id/hold":                              "jobs:write",
	"POST /jobs/:id/release":                           "jobs:write",
	"POST /jobs/:id/rerun":                             "jobs:write",
	"POST /jobs/templates":                             "jobs:write",
	"GET /projects/:project/templates":                 "jobs:read",
	"POST /projects/:project/templates/:name/rename":   "jobs:write",
	"POST /projects/:project/templates/:name/delete":   "jobs:write",
	"GET /api/v1/projects/:project/templates":          "jobs:read",
	"POST /api/v1/projects/:project/templates":         "jobs:write",
	"GET /api/v1/projects/:project/templates/:name":    "jobs:read",
	"DELETE /api/v1/projects/:project/templates/:name": "jobs:write",
	"POST /api/v1/jobs":                                "jobs:write",
	"GET /api/v1/jobs/:id":                             "jobs:read",
	"GET /api/v1/jobs/:id/logs":                        "jobs:read",
	"POST /api/v1/jobs/:id/cancel":                     "jobs:write",
	"POST /api/v1/jobs/:id/rerun":                      "jobs:write",
	"POST /api/v1/jobs/:id/hold":                       "jobs:write",
	"POST /api/v1/jobs/:id/release":                    "jobs:write",
	"POST /api/v1/jobs/:id/metrics":                    "job-token",
	"GET /jobs/:id/telemetry":                          "jobs:read",
	"GET /api/v1/nodes":                                "signed-in",
	"GET /api/v1/quotas":                               "signed-in",
	"POST /api/v1/nodes/:name/state":                   "platform:write",
	"POST /api/v1/nodes/:name/revoke":                  "platform:write",
	"POST /api/v1/nodes/:name/remove":                  "platform:write",
	"POST " + agentapi.PathJoin:                        "agent",
	"POST " + agentapi.PathHeartbeat:                   "agent",
	"GET " + agentapi.PathLeases:                       "agent",
	"POST " + agentapi.PathReport:                      "agent",
	"POST " + agentapi.PathLogs:                        "agent",
	"POST " + agentapi.PathJobToken:                    "agent",
	"GET /api/v1/projects/:project/members":            "project:read",
	"PUT /api/v1/projects/:project/members/:user":      "project:manage",
	"DELETE /api/v1/projects/:project/members/:user":   "project:manage",

	// The admin console: people and access.
	"GET /projects":                                      "signed-in",
	"GET /admin":                                         "platform:read",
	"GET /admin/people":                                  "platform:read",
	"POST /admin/people/:user/disable":                   "platform:write",
	"POST /admin/people/:user/enable":                    "platform:write",
	"POST /admin/people/:user/roles":                     "platform:write",
	"GET /admin/teams":                                   "platform:read",
	"POST /admin/teams":                                  "platform:write",
	"POST /admin/teams/:team/archive":                    "platform:write",
	"POST /admin/projects":                               "platform:write",
	"GET /admin/projects/:project":                       "platform:read",
	"POST /admin/projects/:project/archive":              "platform:write",
	"POST /admin/projects/:project/members":              "platform:write",
	"POST /admin/projects/:project/members/:user/remove": "platform:write",
	"GET /admin/groups":                                  "platform:read",
	"POST /admin/groups":                                 "platform:write",
	"POST /admin/groups/:id/delete":                      "platform:write",
	"GET /admin/quotas":                                  "platform:read",
	"POST /admin/quotas":                                 "platform:write",
	"POST /admin/quotas/:id/delete":                      "platform:write",
	"GET /admin/nodes":                                   "platform:read",
	"GET /admin/nodes/:name":                             "platform:read",
	"POST /admin/nodes/:name/state":                      "platform:write",
	"POST /admin/nodes/:name/labels":                     "platform:write",
	"POST /admin/nodes/:name/pool":                       "platform:write",
	"POST /admin/nodes/:name/remove":                     "platform:write",
	"GET /admin/join-tokens":                             "platform:read",
	"POST /admin/join-tokens":                            "platform:write",
	"POST /admin/join-tokens/revoke":                     "platform:write",
	"GET /admin/priority-classes":                        "platform:read",
	"POST /admin/priority-classes":                       "platform:write",
	"POST /admin/priority-classes/:name/delete":          "platform:write",
	"POST /admin/projects/:project/placement":            "platform:write",
	"POST /admin/nodes/:name/confidential":               "platform:write",
	"GET /admin/settings":                                "platform:read",
	"GET /admin/pools":                                   "platform:read",
	"GET /admin/pools/:name":                             "platform:read",
	"POST /admin/pools/:name/forget-slurm-jobs":          "platform:write",
	"POST /admin/settings":                               "platform:write",
}

// projectScoped are the objects whose permissions hold per project.
var projectScoped = []string{"project", "jobs", "cost"}

// mayPass says whether role may call the route, from the hand-written tables.
func mayPass(t *testing.T, key, role string, own bool) bool {
	want, ok := routeAccess[key]
	if !ok {
		t.Fatalf("%s is not in the matrix test's routeAccess: say who may call it", key)
	}
	switch want {
	case "public", "scrape":
		// The matrix server has no metrics token: scrapes are public (TestMetricsToken sets one).
		return true
	case "signed-in":
		return role != anonymous
	}
	e, ok := expected[want]
	if !ok {
		t.Fatalf("no expected roles for %s (%s): add it to the matrix test's table", want, key)
	}
	obj, _, _ := strings.Cut(want, ":")
	if slices.Contains(projectScoped, obj) && !own {
		return slices.Contains(e.foreign, role)
	}
	return slices.Contains(e.own, role)
}

// TestRouteMatrix walks every route of the table, as every role, on the caller's own
// project and on a foreign one, and checks that the gate lets through exactly whom the
// hand-written table says. A route without a rule fails it.
func TestRouteMatrix(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	table := routes(handlers.New(m.st, "test", nil, handlers.Services{}))
	for _, r := range table {
		if r.access.kind == noRule {
			t.Errorf("%s %s has no access rule: give it one in web/routes.go", r.method, r.path)
		}
	}
	checked := 0
	for _, r := range table {
		key := r.method + " " + r.path
		if routeAccess[key] == "agent" && r.access.kind != agent || routeAccess[key] == "job-token" && r.access.kind != jobToken ||
			routeAccess[key] == "scrape" && r.access.kind != scrape {
			t.Errorf("%s is an %s route but its rule is %s", key, routeAccess[key], r.access)
		}
		scopes := []bool{true}
		if obj, _, ok := strings.Cut(routeAccess[key], ":"); ok && slices.Contains(projectScoped, obj) {
			scopes = []bool{true, false}
		}
		for _, role := range matrixRoles {
			for _, own := range scopes {
				where := map[bool]string{true: "own", false: "foreign"}[own]
				before := m.denials()
				res := m.do(r, role, own)
				checked++
				if routeAccess[key] == "agent" || routeAccess[key] == "job-token" {
					// Users are neither agents nor jobs: no user credential gets through.
					if res.StatusCode < 400 {
						t.Errorf("%s %s as %s: %d, an %s route served a user", r.method, r.path, role, res.StatusCode, routeAccess[key])
					}
					continue
				}
				denied := res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden ||
					(res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login?next="))
				if want := mayPass(t, key, role, own); denied == want {
					t.Errorf("%s %s (%s) as %s in %s project: status %d, want %s", r.method, r.path, r.access, role, where,
						res.StatusCode, map[bool]string{true: "allowed", false: "denied"}[want])
				}
				// A refusal is recorded; sending a browser to sign in is not one.
				if refused := res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden; refused && m.denials() != before+1 {
					t.Errorf("%s %s as %s in %s project: refused with %d but not audited as access.denied", r.method, r.path, role, where, res.StatusCode)
				}
			}
		}
	}
	t.Logf("%d routes, %d requests checked", len(table), checked)
}

// A route that reaches the router without a rule is refused, whoever calls it.
func TestRouteWithoutRuleIsRefused(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	al := audit.New(m.st, time.Now)
	az := authz.New(m.st, al)
	h := handlers.New(m.st, "test", log, handlers.Services{Identity: m.id, Authz: az, Audit: al})
	g := &gate{h: h, identity: m.id, authz: az, audit: al, store: m.st, log: log}
	r := gin.New()
	r.GET("/forgotten", g.check(Access{}), func(c *gin.Context) { c.String(http.StatusOK, "secret") })
	srv := httptest.NewServer(r)
	defer srv.Close()
	cookie, _, err := m.id.StartSession(context.Background(), m.users[models.RoleAdmin], "", "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/forgotten", nil)
	req.AddCookie(&http.Cookie{Name: handlers.SessionCookie, Value: cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || strings.Contains(string(b), "secret") || !strings.Contains(string(b), "no access rule") {
		t.Fatalf("route without a rule, as admin: %d %s", res.StatusCode, b)
	}
}
