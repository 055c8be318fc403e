package web_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// form posts fields with the CSRF token of the caller's session.
func (s *site) form(c *http.Client, token, path string, kv ...string) (*http.Response, string) {
	s.t.Helper()
	v := url.Values{"csrf_token": {token}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return s.send(c, "POST", path, v.Encode(), nil)
}

func wantStatus(t *testing.T, what string, res *http.Response, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("%s = %d, want %d", what, res.StatusCode, want)
	}
}

// Teams, projects and roles through the console's pages: bad input is refused naming
// the field and changes nothing; a grant reaches the person at once; every change shows
// on the page, with who made it.
func TestTeamsProjectsAndRolesThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ada, _ := s.member("ada")
		token := s.csrf(admin, "/admin/teams")

		res, _ := s.form(admin, token, "/admin/teams", "name", "vision", "display_name", "Computer vision")
		wantStatus(t, "create team", res, http.StatusSeeOther)
		res, body := s.form(admin, token, "/admin/teams", "name", "vision")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Name: a team called &#34;vision&#34; already exists") || !strings.Contains(body, `id="team-name" name="name" value="vision"`) {
			t.Fatalf("duplicate team = %d, want 400 naming the name with the form kept", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/projects", "team", "vision", "name", "Detector!")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Name: &#34;Detector!&#34; is not a project name") {
			t.Fatalf("bad project name = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/projects", "team", "vision", "name", "detector")
		wantStatus(t, "create project", res, http.StatusSeeOther)
		if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/admin/projects/detector?notice=") {
			t.Errorf("after creating a project: %s", loc)
		}
		if teams, _ := st.Teams(ctx); len(teams) != 2 { // default and vision
			t.Errorf("teams = %d, want 2: bad input created one", len(teams))
		}

		// Before the grant ada sees no project of vision's.
		_, body = s.send(ada, "GET", "/projects", "", nil)
		if strings.Contains(body, "detector") {
			t.Fatal("ada sees detector before any grant")
		}
		res, body = s.form(admin, token, "/admin/projects/detector/members", "username", "nobody", "role", "member")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `User: there is no user &#34;nobody&#34;`) {
			t.Fatalf("grant to a missing user = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/projects/detector/members", "username", "ada", "role", "owner")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Role: &#34;owner&#34; is not a project role") {
			t.Fatalf("grant of a missing role = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/projects/detector/members", "username", "ada", "role", "member")
		wantStatus(t, "grant", res, http.StatusSeeOther)
		_, body = s.send(ada, "GET", "/projects", "", nil)
		if !strings.Contains(body, `<tr data-project="detector"><td>detector</td><td>vision</td><td>member</td>`) {
			t.Fatalf("ada's projects after the grant: %s", body)
		}
		res, body = s.send(admin, "GET", "/admin/projects/detector", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `data-member="ada"`) || !strings.Contains(body, "role.granted") || !strings.Contains(body, "<td>admin</td>") {
			t.Fatalf("project page = %d; want ada listed and the grant by admin under recent changes", res.StatusCode)
		}

		// Removing asks first; only the confirmed post removes.
		res, body = s.form(admin, token, "/admin/projects/detector/members/ada/remove")
		if res.StatusCode != 200 || !strings.Contains(body, "Remove ada from detector?") || !strings.Contains(body, `name="confirm" value="yes"`) {
			t.Fatalf("remove without confirmation = %d", res.StatusCode)
		}
		if _, body = s.send(ada, "GET", "/projects", "", nil); !strings.Contains(body, "detector") {
			t.Fatal("an unconfirmed removal removed")
		}
		res, _ = s.form(admin, token, "/admin/projects/detector/members/ada/remove", "confirm", "yes")
		wantStatus(t, "confirmed remove", res, http.StatusSeeOther)
		if _, body = s.send(ada, "GET", "/projects", "", nil); strings.Contains(body, "detector") {
			t.Fatal("ada still sees detector after the removal")
		}

		// Archiving the team asks first, then archives its projects.
		res, body = s.form(admin, token, "/admin/teams/vision/archive", "archived", "true")
		if res.StatusCode != 200 || !strings.Contains(body, "Archive team vision?") {
			t.Fatalf("archive without confirmation = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/teams/vision/archive", "archived", "true", "confirm", "yes")
		wantStatus(t, "archive team", res, http.StatusSeeOther)
		if p, _ := st.ProjectByName(ctx, "detector"); !p.Archived {
			t.Error("the team's project is not archived")
		}
		res, _ = s.form(admin, token, "/admin/teams/ghosts/archive", "archived", "true", "confirm", "yes")
		wantStatus(t, "archive a missing team", res, http.StatusNotFound)
		_, body = s.send(admin, "GET", "/admin/teams", "", nil)
		for _, a := range []string{"team.created", "project.created", "team.archived"} {
			if !strings.Contains(body, a) {
				t.Errorf("teams page lacks %s under recent changes", a)
			}
		}

		// Auditors look but do not touch; others may not look.
		auditorUser := &models.User{Username: "audrey"}
		if err := st.CreateUser(ctx, auditorUser); err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetGlobalRoles(ctx, auditorUser, false, true); err != nil {
			t.Fatal(err)
		}
		pw, _ := s.id.ResetPassword(ctx, "audrey")
		auditor := s.signIn("audrey", pw)
		res, body = s.send(auditor, "GET", "/admin/teams", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "vision") || strings.Contains(body, "Create team") || strings.Contains(body, "Archive…") {
			t.Fatalf("auditor's teams page = %d; want it read-only", res.StatusCode)
		}
		res, _ = s.form(auditor, s.csrf(auditor, "/admin/teams"), "/admin/teams", "name", "sneaky")
		wantStatus(t, "auditor creates a team", res, http.StatusForbidden)
		res, _ = s.send(ada, "GET", "/admin/teams", "", nil)
		wantStatus(t, "member opens the console", res, http.StatusForbidden)
		if s.denials("POST /admin/teams") != 1 || s.denials("GET /admin/teams") != 1 {
			t.Errorf("refusals audited: %d, %d", s.denials("POST /admin/teams"), s.denials("GET /admin/teams"))
		}
	})
}

// Disabling a person signs them out and refuses their tokens at once, while their jobs
// keep running; enabling lets them back in.
func TestDisablePersonThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ada, adaUser := s.member("ada")
		secret, _, err := s.id.CreateToken(ctx, adaUser, "cli", identity.ScopeRead, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		def, _ := st.ProjectByName(ctx, "default")
		job := &models.Job{Name: "train", ProjectID: def.ID, UserID: adaUser.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "research"}
		if err := st.CreateJob(ctx, job, "test"); err != nil {
			t.Fatal(err)
		}
		token := s.csrf(admin, "/admin/people")

		res, body := s.form(admin, token, "/admin/people/ada/disable")
		if res.StatusCode != 200 || !strings.Contains(body, "Disable ada?") || !strings.Contains(body, `name="stop_jobs"`) {
			t.Fatalf("disable without confirmation = %d", res.StatusCode)
		}
		if res, _ = s.send(ada, "GET", "/", "", nil); res.StatusCode != 200 {
			t.Fatal("an unconfirmed disable signed ada out")
		}
		res, _ = s.form(admin, token, "/admin/people/ada/disable", "confirm", "yes")
		wantStatus(t, "disable", res, http.StatusSeeOther)
		if loc, _ := url.QueryUnescape(res.Header.Get("Location")); !strings.Contains(loc, "Disabled ada: 1 sessions ended; 1 of their jobs keep running or waiting.") {
			t.Errorf("notice = %s", loc)
		}
		if res, _ = s.send(ada, "GET", "/", "", nil); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
			t.Fatalf("ada's session after disabling = %d, want sent to sign in", res.StatusCode)
		}
		if res, _ = s.send(s.browser(), "GET", "/api/v1/me", "", bearer); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("ada's token after disabling = %d, want 401", res.StatusCode)
		}
		if fresh, _ := st.JobByID(ctx, job.ID); fresh.State != models.JobQueued {
			t.Errorf("ada's job is %s: disabling alone must not stop it", fresh.State)
		}
		_, body = s.send(admin, "GET", "/admin/people", "", nil)
		if !strings.Contains(body, "badge-disabled") || !strings.Contains(body, "user.disabled") {
			t.Error("the people page shows neither the disabled state nor the change")
		}
		res, body = s.form(admin, token, "/admin/people/admin/disable", "confirm", "yes")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "you cannot disable your own account") {
			t.Fatalf("disabling oneself = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/people/ada/enable")
		wantStatus(t, "enable", res, http.StatusSeeOther)
		if res, _ = s.send(s.browser(), "GET", "/api/v1/me", "", bearer); res.StatusCode != 200 {
			t.Fatalf("ada's token after enabling = %d", res.StatusCode)
		}

		// Global roles; an admin cannot drop their own.
		res, _ = s.form(admin, token, "/admin/people/ada/roles", "auditor", "true")
		wantStatus(t, "make ada an auditor", res, http.StatusSeeOther)
		if u, _ := st.UserByUsername(ctx, "ada"); !u.IsAuditor || u.IsAdmin {
			t.Errorf("ada's global roles = admin %v auditor %v", u.IsAdmin, u.IsAuditor)
		}
		res, _ = s.form(admin, token, "/admin/people/admin/roles", "auditor", "true")
		wantStatus(t, "drop one's own admin role", res, http.StatusBadRequest)
	})
}

// Settings: password login cannot go off without single sign-on; session lifetimes
// change from the page and apply to sessions already open.
func TestSettingsThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ada, _ := s.member("ada")
		token := s.csrf(admin, "/admin/settings")
		res, body := s.form(admin, token, "/admin/settings", "local_login", "off", "session_idle", "12h0m0s", "session_lifetime", "168h0m0s")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Local login: single sign-on is not configured") || !strings.Contains(body, "--oidc-issuer") {
			t.Fatalf("local login off without SSO = %d", res.StatusCode)
		}
		if on, _ := s.id.LocalLoginEnabled(t.Context()); !on {
			t.Fatal("a refused change turned password login off")
		}
		res, body = s.form(admin, token, "/admin/settings", "local_login", "on", "session_idle", "soon", "session_lifetime", "168h")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Session idle: &#34;soon&#34; is not a duration") || !strings.Contains(body, `value="soon"`) {
			t.Fatalf("bad duration = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/settings", "local_login", "on", "session_idle", "48h", "session_lifetime", "24h")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "longer than the session lifetime") {
			t.Fatalf("idle longer than lifetime = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/settings", "local_login", "on", "session_idle", "30m", "session_lifetime", "2h")
		wantStatus(t, "save lifetimes", res, http.StatusSeeOther)
		_, body = s.send(admin, "GET", "/admin/settings", "", nil)
		if !strings.Contains(body, `value="30m0s"`) || !strings.Contains(body, "settings.changed") {
			t.Error("the settings page shows neither the new idle time nor the change")
		}
		s.clock.advance(3 * time.Hour)
		if res, _ = s.send(ada, "GET", "/", "", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("a session older than the new 2h lifetime = %d, want ended", res.StatusCode)
		}
	})
}

// Group mappings: created and removed from the page, bad input named.
func TestGroupMappingsThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/groups")
		res, body := s.form(admin, token, "/admin/groups", "group", "ml-eng", "role", "member")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Project: a project role needs either a team") {
			t.Fatalf("project role without a scope = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/groups", "group", "ml-eng", "role", "member", "team", "default")
		wantStatus(t, "map a group", res, http.StatusSeeOther)
		_, body = s.send(admin, "GET", "/admin/groups", "", nil)
		if !strings.Contains(body, "<code>ml-eng</code>") || !strings.Contains(body, "every project of team default") || !strings.Contains(body, "group_mapping.created") {
			t.Fatal("the mapping or its change is not on the page")
		}
		all, _ := st.GroupMappings(t.Context())
		path := "/admin/groups/" + strconv.FormatInt(all[0].ID, 10) + "/delete"
		if res, body = s.form(admin, token, path); res.StatusCode != 200 || !strings.Contains(body, "Remove this group mapping?") {
			t.Fatalf("delete without confirmation = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, path, "confirm", "yes")
		wantStatus(t, "delete", res, http.StatusSeeOther)
		if all, _ = st.GroupMappings(t.Context()); len(all) != 0 {
			t.Errorf("mappings left: %+v", all)
		}
		res, _ = s.form(admin, token, path, "confirm", "yes")
		wantStatus(t, "delete again", res, http.StatusNotFound)
	})
}

// The console's front page leads to every admin area: each page route under /admin
// (no parameter, not a download) is linked from it, or another page of its area is
// (the cost settings' rates page, whose tabs lead to budgets, rules and channels).
func TestAdminConsoleLinksEveryArea(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	console := s.mustGet(s.signIn("admin", s.password), "/admin")
	router, ok := s.srv.Config.Handler.(interface{ Routes() gin.RoutesInfo })
	if !ok {
		t.Fatalf("the router (%T) does not list its routes", s.srv.Config.Handler)
	}
	pages := 0
	for _, r := range router.Routes() {
		path, ok := strings.CutPrefix(r.Path, "/admin/")
		if r.Method != http.MethodGet || !ok || strings.ContainsAny(path, ":.*") || strings.HasSuffix(path, "/export") {
			continue
		}
		pages++
		area, _, _ := strings.Cut(path, "/")
		if !strings.Contains(console, `href="/admin/`+area+`"`) && !strings.Contains(console, `href="/admin/`+area+`/`) {
			t.Errorf("the admin console links nowhere in /admin/%s, where GET %s is", area, r.Path)
		}
	}
	if pages < 10 {
		t.Fatalf("found %d admin pages among the routes, want the console's dozen", pages)
	}
}

// The settings page says how long jobs' output is kept and how much of it, as the
// server was started: for good by default, or for the days of --job-log-retention.
func TestSettingsPageSaysHowJobOutputIsKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retention time.Duration
		want      string
	}{
		{0, "Kept for good; at most 64 MiB of each stream (stdout, stderr) of each attempt and replica."},
		{30 * 24 * time.Hour, "Kept 30 days after a job ends, then deleted; at most 64 MiB of each stream (stdout, stderr) of each attempt and replica."},
	} {
		s := buildLoggedJobSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), io.Discard, func(c *dispatch.Config) { c.LogRetention = tc.retention })
		s.t = t
		body := s.mustGet(s.signIn("admin", s.password), "/admin/settings")
		if !strings.Contains(body, `<p data-testid="output-policy">`+tc.want+`</p>`) {
			t.Errorf("retention %s: the settings page does not say %q:\n%s", tc.retention, tc.want, body)
		}
	}
}
