package web_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// errorSection is the error of an error page: its status, heading and words.
var errorSection = regexp.MustCompile(`(?s)<section class="error" role="alert">(.*?)</section>`)

// Refusals say what happened and what to do next in the portal's words, as sentences:
// a 403 names what the caller may not do, the role they have and whom to ask for which
// role (never an internal name such as "platform"); a 404 names what is missing and
// where to look. The API answers the same words in its usual error body; a message with
// a field is what follows "field: ", as every field error.
func TestRefusalsSayWhatToDoNext(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		vic, vicUser := s.member("vic")
		p, err := st.ProjectByName(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetProjectRole(ctx, vicUser, p, models.RoleViewer); err != nil {
			t.Fatal(err)
		}
		olga, _ := s.member("olga")
		admin := s.signIn("admin", s.password)
		res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}

		pages := []struct {
			who    string
			c      *http.Client
			path   string
			status int
			want   string // the error's words, tags dropped
			next   string // where a 404 links to look instead; empty for nowhere
		}{
			{"a member", ada, "/admin", 403, "403 Not allowed You may not open the admin console: it is open to Gantry's admins and auditors. Ask an admin if you need something there.", ""},
			{"a member", ada, "/admin/audit", 403, "403 Not allowed You may not read the audit log: it is open to Gantry's admins and auditors. Ask an admin for the auditor role if you need it.", ""},
			{"an outsider", olga, "/jobs/" + m[1], 403, "403 Not allowed You may not see the jobs of project default: you have no role in it. Ask a team lead of project default or a Gantry admin for the viewer role.", ""},
			{"a viewer", vic, "/jobs/new?project=default&template=nightly", 404, "404 No such template Project default has no template called nightly. Its templates are listed on the submit form", "/jobs/new?project=default"},
			{"a member", ada, "/jobs/999999", 404, "404 No such job There is no job 999999. Find yours on the jobs list", "/jobs"},
			{"a member", ada, "/jobs/new?clone=999999", 404, "404 No such job There is no job 999999 to copy. Pick one from the jobs list", "/jobs"},
			{"a member", ada, "/alerts/999999", 404, "404 No such alert There is no alert 999999 that you may see. The alerts page lists yours", "/alerts"},
			{"a member", ada, "/feedback/999999", 404, "404 No such feedback There is no feedback item 999999. See the board for the open ones", "/feedback"},
			{"a member", ada, "/projects/nope/templates", 404, `404 No such project There is no project "nope". Your projects lists the ones you belong to`, "/projects"},
			{"an admin", admin, "/admin/nodes/nope", 404, "404 No such node There is no node nope. See every node on the nodes page", "/admin/nodes"},
			{"an admin", admin, "/admin/pools/nope", 404, `404 No such pool There is no pool "nope". The pools page lists every pool`, "/admin/pools"},
			{"a member", ada, "/alerts?before=newest", 400, `400 Bad page Before: "newest" is not an alert id; follow the page's own links.`, ""},
			{"a member", ada, "/alerts?state=open", 400, `400 Unknown state State "open" is not one of firing, acknowledged, silenced, resolved: pick one from the list.`, ""},
			{"a member", ada, "/feedback?status=open", 400, `400 Unknown status Status "open" is not one of new, planned, in-progress, done, declined or all (empty: the open ones): pick one from the list.`, ""},
			{"a member", ada, "/nowhere", 404, "404 Page not found There is no page at /nowhere. Use the navigation above to find your way.", ""},
		}
		tags := regexp.MustCompile(`<[^>]*>`)
		for _, pg := range pages {
			res, body := s.send(pg.c, "GET", pg.path, "", nil)
			sec := errorSection.FindStringSubmatch(body)
			if res.StatusCode != pg.status || sec == nil {
				t.Errorf("%s opening %s = %d without an error section; want %d", pg.who, pg.path, res.StatusCode, pg.status)
				continue
			}
			words := strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(sec[1], " "))), " ")
			if !strings.HasPrefix(words, pg.want) {
				t.Errorf("%s opening %s reads %q; want %q", pg.who, pg.path, words, pg.want)
			}
			if pg.next != "" && !strings.Contains(sec[1], `<a href="`+html.EscapeString(pg.next)+`" data-testid="error-next">`) {
				t.Errorf("%s opening %s is not linked to %s: %s", pg.who, pg.path, pg.next, sec[1])
			}
			if strings.Contains(words, "platform") {
				t.Errorf("%s opening %s is told of %q", pg.who, pg.path, words)
			}
		}

		token, _, err := s.id.CreateToken(ctx, vicUser, "v", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + token}
		api := []struct {
			method, path, body string
			status             int
			want               map[string]string
		}{
			{"POST", "/api/v1/jobs", `{"project": "default", "name": "x", "command": ["true"]}`, 403, map[string]string{"code": "forbidden",
				"message": "You may not submit or change jobs in project default: your role there is viewer. Ask a team lead of project default or a Gantry admin for the member role."}},
			{"GET", "/api/v1/jobs/999999", "", 404, map[string]string{"code": "not_found", "message": "there is no job 999999", "field": "id"}},
			{"GET", "/api/v1/nowhere", "", 404, map[string]string{"code": "not_found", "message": "There is no endpoint GET /api/v1/nowhere. GET /api/v1/openapi.json lists them all."}},
		}
		for _, a := range api {
			res, body := s.send(s.browser(), a.method, a.path, a.body, bearer)
			var got struct{ Error map[string]string }
			if err := json.Unmarshal([]byte(body), &got); err != nil || res.StatusCode != a.status || len(got.Error) != len(a.want) {
				t.Errorf("%s %s = %d %s; want %d with %v", a.method, a.path, res.StatusCode, body, a.status, a.want)
				continue
			}
			for k, v := range a.want {
				if got.Error[k] != v {
					t.Errorf("%s %s: error %s = %q, want %q", a.method, a.path, k, got.Error[k], v)
				}
			}
		}
	})
}

// A page that does not exist keeps the caller signed in on screen: the 404 has their
// menu (Sign out, Give feedback) and, for an admin, the console's link, as every other
// page; no route's gate ran before it, so it reads the session itself. Anyone else gets
// the same 404 without a menu, not the login page.
func TestUnknownPageKeepsTheUserMenu(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	admin := s.signIn("admin", s.password)
	for _, c := range []struct {
		who           string
		c             *http.Client
		menu, console bool
	}{
		{"ada", ada, true, false},
		{"admin", admin, true, true},
		{"anonymous", s.browser(), false, false},
	} {
		res, body := s.send(c.c, "GET", "/nowhere", "", nil)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "Page not found") {
			t.Fatalf("%s opening /nowhere = %d", c.who, res.StatusCode)
		}
		if menu := strings.Contains(body, `class="user-menu"`) && strings.Contains(body, "Sign out"); menu != c.menu {
			t.Errorf("%s: the 404 page has the user menu: %t, want %t", c.who, menu, c.menu)
		}
		if console := strings.Contains(body, `href="/admin"`); console != c.console {
			t.Errorf("%s: the 404 page links the admin console: %t, want %t", c.who, console, c.console)
		}
	}
}
