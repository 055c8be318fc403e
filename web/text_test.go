package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A NUL byte or invalid UTF-8 in a path, a query or a form is refused with 400 naming the
// parameter, on both databases (PostgreSQL cannot even look such a name up), for the API
// and the pages alike, before anything is read by it, and so is a JSON body's string
// that holds one or half a UTF-16 surrogate pair, and a key given twice in one object
// (encoding/json would keep the last unsaid); nothing is stored or audited.
func TestTextThatIsNotTextIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newJobsSite(t, st)
		write, _, err := s.id.CreateToken(ctx, mustUser(t, st, "admin"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + write}
		admin := s.signIn("admin", s.password)
		csrf := s.csrf(admin, "/jobs/new")
		anon := s.browser()
		loginCSRF := s.csrf(anon, "/login")
		jobs, _ := st.Jobs(ctx, store.JobFilter{})
		events, _ := st.CountAuditEvents(ctx, store.AuditFilter{})

		for _, tc := range []struct {
			name               string
			client             *http.Client
			method, path, body string
			header             map[string]string
			field              string
		}{
			{"NUL in a list filter", s.browser(), "GET", "/api/v1/jobs?user=%00", "", bearer, "user"},
			{"invalid UTF-8 in a list filter", s.browser(), "GET", "/api/v1/jobs?project=%FF", "", bearer, "project"},
			{"NUL in an image filter", s.browser(), "GET", "/api/v1/jobs?image=x%00", "", bearer, "image"},
			{"invalid UTF-8 in a parameter's name", s.browser(), "GET", "/api/v1/jobs?%FF=1", "", bearer, "query"},
			{"NUL in a project of the path", s.browser(), "GET", "/api/v1/projects/%00/templates", "", bearer, "project"},
			{"invalid UTF-8 in a template name", s.browser(), "GET", "/api/v1/projects/vision-main/templates/%FF", "", bearer, "name"},
			{"NUL in a member's name", s.browser(), "PUT", "/api/v1/projects/vision-main/members/a%00", `{"role": "member"}`, bearer, "user"},
			{"NUL in a node's name", s.browser(), "POST", "/api/v1/nodes/%00/state", `{"state": "cordoned"}`, bearer, "name"},
			{"a page's filter", admin, "GET", "/jobs?user=%00", "", nil, "user"},
			{"a page's path", admin, "GET", "/admin/nodes/%FF", "", nil, "name"},
			{"the submit form's project", admin, "POST", "/jobs", "csrf_token=" + csrf + "&project=%00&name=x&command=true", nil, "project"},
			{"the submit form's image", admin, "POST", "/jobs", "csrf_token=" + csrf + "&project=vision-main&name=x&command=true&image=%FF", nil, "image"},
			{"a user name at login", anon, "POST", "/login", "csrf_token=" + loginCSRF + "&username=admin%00&password=x", nil, "username"},
		} {
			res, body := s.send(tc.client, tc.method, tc.path, tc.body, tc.header)
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: %s %s = %d, want 400: %.300s", tc.name, tc.method, tc.path, res.StatusCode, body)
				continue
			}
			if strings.HasPrefix(tc.path, "/api/") {
				var e errorBody
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Field != tc.field || e.Error.Code != "invalid" || e.Error.Message != "must be UTF-8 text without NUL bytes" && tc.field != "query" {
					t.Errorf("%s: %s, want the field %s named", tc.name, body, tc.field)
				}
				continue
			}
			if want := `The value of &#34;` + tc.field + `&#34; must be UTF-8 text without NUL bytes.`; !strings.Contains(body, want) || !strings.Contains(body, "Not understood") {
				t.Errorf("%s: the page does not say %q: %s", tc.name, want, errorSection.FindString(body))
			}
		}
		// JSON bodies: a \u0000 escape is a NUL byte; an unpaired surrogate would be stored as U+FFFD.
		asForm := map[string]string{"Authorization": bearer["Authorization"], "Content-Type": "application/x-www-form-urlencoded"}
		for _, tc := range []struct {
			name, method, path, body, field, says string
			header                                map[string]string
		}{
			{"NUL in the project of a job", "POST", "/api/v1/jobs", `{"project": "vision-main\u0000", "name": "x", "command": ["true"]}`, "project", "NUL", nil},
			{"NUL in JSON labelled a form", "POST", "/api/v1/jobs", `{"project": "vision-main\u0000", "name": "x", "command": ["true"]}`, "project", "NUL", asForm},
			{"half a surrogate pair in a variable", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "env": {"A": "\ud800"}}`, "env.A", "surrogate", nil},
			{"half a surrogate pair in a command", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true", "\udfff"]}`, "command[1]", "surrogate", nil},
			{"a template's spec", "POST", "/api/v1/projects/vision-main/templates", `{"name": "t", "spec": {"name": "\ud83d", "command": ["true"]}}`, "spec.name", "surrogate", nil},
			{"NUL in the project of usage", "POST", "/api/v1/usage", `{"resource": "egress", "project": "\u0000", "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "project", "NUL", nil},
			{"a project given twice", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "project": "speech-main"}`, "project", "twice", nil},
			{"a variable given twice", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "env": {"A": "1", "A": "2"}}`, "env.A", "twice", nil},
			{"a resource given twice", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "resources": {"gpus": 0, "gpus": 8}}`, "resources.gpus", "twice", nil},
			{"NUL in a node's reason", "POST", "/api/v1/nodes/gpu-1/state", `{"state": "cordoned", "reason": "a\u0000"}`, "reason", "NUL", nil},
		} {
			header := bearer
			if tc.header != nil {
				header = tc.header
			}
			res, body := s.send(s.browser(), tc.method, tc.path, tc.body, header)
			var e errorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != tc.field || !strings.Contains(e.Error.Message, tc.says) {
				t.Errorf("%s: %d %s, want 400 naming %s", tc.name, res.StatusCode, body, tc.field)
			}
		}
		if n, _ := st.Jobs(ctx, store.JobFilter{}); len(n) != len(jobs) {
			t.Errorf("refused requests stored %d jobs", len(n)-len(jobs))
		}
		if tt, _ := st.JobTemplates(ctx, projectByName(t, st, "vision-main").ID); len(tt) != 0 {
			t.Errorf("refused requests stored templates: %+v", tt)
		}
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{}); n != events {
			t.Errorf("refused input appended %d audit events", n-events)
		}
	})
}

// encoding/json matches keys ignoring case; the API does not: a key written in other
// letter case than its field's is refused with 400 naming it and the field's name, in
// every JSON body the API reads, before anything is stored or, for the project of a
// job, authorised.
func TestJSONKeysAreMatchedExactly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newJobsSite(t, st)
		write, _, err := s.id.CreateToken(ctx, mustUser(t, st, "admin"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + write}
		jobs, _ := st.Jobs(ctx, store.JobFilter{})
		events, _ := st.CountAuditEvents(ctx, store.AuditFilter{})
		for _, tc := range []struct{ name, method, path, body, field, exact string }{
			{"a job's project", "POST", "/api/v1/jobs", `{"Project": "vision-main", "name": "x", "command": ["true"]}`, "Project", "project"},
			{"a job's name", "POST", "/api/v1/jobs", `{"project": "vision-main", "NAME": "x", "command": ["true"]}`, "NAME", "name"},
			{"a job's resources", "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "resources": {"GPUs": 0}}`, "resources.GPUs", "gpus"},
			{"a template's name", "POST", "/api/v1/projects/vision-main/templates", `{"Name": "t", "spec": {"name": "x", "command": ["true"]}}`, "Name", "name"},
			{"a template's spec", "POST", "/api/v1/projects/vision-main/templates", `{"name": "t", "spec": {"name": "x", "Command": ["true"]}}`, "spec.Command", "command"},
			{"usage", "POST", "/api/v1/usage", `{"resource": "egress", "project": "vision-main", "Bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "Bytes", "bytes"},
			{"a member's role", "PUT", "/api/v1/projects/vision-main/members/admin", `{"Role": "viewer"}`, "Role", "role"},
			{"a node's state", "POST", "/api/v1/nodes/gpu-1/state", `{"STATE": "cordoned"}`, "STATE", "state"},
		} {
			res, body := s.send(s.browser(), tc.method, tc.path, tc.body, bearer)
			var e errorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Code != "invalid" ||
				e.Error.Field != tc.field || !strings.Contains(e.Error.Message, `"`+tc.exact+`"`) {
				t.Errorf("%s: %d %s, want 400 naming %s and %q", tc.name, res.StatusCode, body, tc.field, tc.exact)
			}
		}
		// A variable written as an object: its keys are the spec's too.
		res, body := s.send(s.browser(), "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "x", "command": ["true"], "env": {"A": {"Value": "1"}}}`, bearer)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"field":"env.A"`) {
			t.Errorf("a variable's value in capitals: %d %s, want 400 naming env.A", res.StatusCode, body)
		}
		if n, _ := st.Jobs(ctx, store.JobFilter{}); len(n) != len(jobs) {
			t.Errorf("refused requests stored %d jobs", len(n)-len(jobs))
		}
		if tt, _ := st.JobTemplates(ctx, projectByName(t, st, "vision-main").ID); len(tt) != 0 {
			t.Errorf("refused requests stored templates: %+v", tt)
		}
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{}); n != events {
			t.Errorf("refused input appended %d audit events", n-events)
		}
	})
}
