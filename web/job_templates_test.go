package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A member saves the submit form as a template of the project and fills the form from
// it in one click; bad names and forms are shown again by field; the API lists, saves
// and deletes templates with field-named 400s; who saved a template, a team lead and
// admins rename and delete it, no one else; nothing is ever submitted.
func TestJobTemplatesThroughThePagesAndAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		if _, body := s.send(ada, "GET", "/jobs/new", "", nil); !strings.Contains(body, "default has no saved templates yet") {
			t.Fatalf("the form of a project without templates: %s", body)
		}
		token := s.csrf(ada, "/jobs/new")
		save := func(c *http.Client, name string, f url.Values) (*http.Response, string) {
			f.Set("template_name", name)
			return s.send(c, "POST", "/jobs/templates", f.Encode(), nil)
		}
		for _, b := range []struct{ name, field, value, formField, says string }{
			{"", "", "", "template_name", "Template name: is required"},
			{"a b", "", "", "template_name", `Template name: &#34;a b&#34; is not a template name`},
			{"nightly", "command", "", "command", "Command: is required"},
			{"nightly", "gpus", "x", "gpus", "GPUs: must be a whole number"},
			{"nightly", "priority_class", "urgent", "priority_class", `Priority class: there is no priority class &#34;urgent&#34;`},
		} {
			f := jobForm(token)
			if b.field != "" {
				f.Set(b.field, b.value)
			}
			res, body := save(ada, b.name, f)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `data-testid="form-error">`+b.says) ||
				!regexp.MustCompile(`id="f-`+b.formField+`"[^>]*aria-invalid="true"`).MatchString(body) || !strings.Contains(body, `value="train-1"`) {
				t.Errorf("save %q with %s=%q: %d, want 400 on %s saying %q; page says %s", b.name, b.field, b.value, res.StatusCode, b.formField, b.says, formErrorOf(body))
			}
		}
		res, _ := save(ada, "nightly", jobForm(token))
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/jobs/new?saved=1&project=default&template=nightly" {
			t.Fatalf("save = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		res, body := s.send(ada, "GET", res.Header.Get("Location"), "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "Saved template nightly of default") || !strings.Contains(body, `value="train-1"`) ||
			!strings.Contains(body, "EPOCHS=3\nLR=0.1</textarea>") || !strings.Contains(body, `value="1h30m"`) || !strings.Contains(body, `<option value="share-small" selected>`) {
			t.Fatalf("the form after saving = %d %s", res.StatusCode, body)
		}
		if res, body := save(ada, "nightly", jobForm(token)); res.StatusCode != http.StatusBadRequest ||
			!strings.Contains(body, "Template name: project default already has a template called &#34;nightly&#34;") {
			t.Fatalf("a taken name = %d: %s", res.StatusCode, formErrorOf(body))
		}
		// The form lists it; one click fills the form from it.
		_, body = s.send(ada, "GET", "/jobs/new", "", nil)
		use := regexp.MustCompile(`<a href="([^"]+)" data-template="nightly">Use nightly</a>\s*<span class="meta">([^<]*)</span>`).FindStringSubmatch(body)
		if use == nil || use[2] != "0.25 GPU, 2 CPU, 8 GiB RAM · research · saved by ada" {
			t.Fatalf("the form does not offer the template: %v\n%s", use, body)
		}
		res, body = s.send(ada, "GET", strings.ReplaceAll(use[1], "&amp;", "&"), "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "Filled in from template nightly") || !strings.Contains(body, `value="python train.py --note &#39;two words&#39;"`) {
			t.Fatalf("the form from the template = %d %s", res.StatusCode, body)
		}
		if res, _ := s.send(ada, "GET", "/jobs/new?project=default&template=nope", "", nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("a missing template = %d, want 404", res.StatusCode)
		}

		// The API, as another member.
		bob := s.user("bob", "default", models.RoleMember)
		secret, _, err := s.id.CreateToken(ctx, userByName(t, st, "bob"), "cli", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		res, body = s.send(s.browser(), "GET", "/api/v1/projects/default/templates", "", bearer)
		var list struct {
			Project   string `json:"project"`
			Templates []struct {
				Name      string          `json:"name"`
				CreatedBy string          `json:"created_by"`
				Spec      json.RawMessage `json:"spec"`
			} `json:"templates"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil || res.StatusCode != 200 || len(list.Templates) != 1 || list.Templates[0].Name != "nightly" ||
			list.Templates[0].CreatedBy != "ada" || !strings.Contains(string(list.Templates[0].Spec), `"command":["python","train.py","--note","two words"]`) {
			t.Fatalf("GET templates = %d %s", res.StatusCode, body)
		}
		for in, field := range map[string]string{
			`{"name": "eval", "spec": {"name": "e", "command": ["./eval"], "resources": {"gpus": -1}}}`: "spec.resources.gpus",
			`{"name": "nightly", "spec": {"name": "e", "command": ["./eval"]}}`:                         "name",
			`{"name": "eval", "spec": {"name": "e", "command": ["./eval"], "env": {"A=B": "1"}}}`:       "spec.env",
			`{"name": "eval", "spec": {"name": "e", "command": ["./eval"], "colour": "red"}}`:           "spec.colour",
			`{"name": "eval"}`: "spec",
		} {
			res, body := s.send(s.browser(), "POST", "/api/v1/projects/default/templates", in, bearer)
			var e struct {
				Error handlers.APIError `json:"error"`
			}
			if json.Unmarshal([]byte(body), &e) != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != field || e.Error.Message == "" {
				t.Errorf("POST %s = %d %s, want 400 on %s", in, res.StatusCode, body, field)
			}
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/projects/default/templates", `{"name": "eval", "spec": {"name": "e", "command": ["./eval"]}}`, bearer)
		if res.StatusCode != http.StatusCreated || !strings.Contains(body, `"created_by":"bob"`) || !strings.Contains(body, `"project":"default"`) {
			t.Fatalf("POST a template = %d %s", res.StatusCode, body)
		}
		if res, body := s.send(s.browser(), "GET", "/api/v1/projects/default/templates/eval", "", bearer); res.StatusCode != 200 || !strings.Contains(body, `"command":["./eval"]`) {
			t.Fatalf("GET a template = %d %s", res.StatusCode, body)
		}
		if res, body := s.send(s.browser(), "GET", "/api/v1/projects/default/templates/nope", "", bearer); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"field":"name"`) {
			t.Fatalf("GET a missing template = %d %s", res.StatusCode, body)
		}
		before := s.denials("DELETE /api/v1/projects/default/templates/nightly")
		if res, body := s.send(s.browser(), "DELETE", "/api/v1/projects/default/templates/nightly", "", bearer); res.StatusCode != http.StatusForbidden ||
			!strings.Contains(body, "Template nightly was saved by ada") || s.denials("DELETE /api/v1/projects/default/templates/nightly") != before+1 {
			t.Fatalf("bob deletes ada's template = %d %s", res.StatusCode, body)
		}

		// The templates page: Ada changes hers, Bob only his own; a team lead any.
		_, body = s.send(bob, "GET", "/projects/default/templates", "", nil)
		if !strings.Contains(body, `<tr data-template="nightly">`) || strings.Contains(body, "/templates/nightly/delete") || !strings.Contains(body, "/templates/eval/delete") {
			t.Fatalf("bob's templates page: %s", body)
		}
		if res, _ := s.send(bob, "POST", "/projects/default/templates/nightly/rename", url.Values{"csrf_token": {s.csrf(bob, "/jobs/new")}, "name": {"bobs"}}.Encode(), nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("bob renames ada's template = %d, want 403", res.StatusCode)
		}
		res, body = s.send(ada, "POST", "/projects/default/templates/nightly/rename", url.Values{"csrf_token": {token}, "name": {"eval"}}.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "New name for nightly: project default already has a template called &#34;eval&#34;") ||
			!regexp.MustCompile(`id="rename-nightly"[^>]*value="eval"[^>]*aria-invalid="true"`).MatchString(body) {
			t.Fatalf("rename onto a taken name = %d %s", res.StatusCode, body)
		}
		res, _ = s.send(ada, "POST", "/projects/default/templates/nightly/rename", url.Values{"csrf_token": {token}, "name": {"nightly-2"}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/projects/default/templates?notice=") {
			t.Fatalf("rename = %d → %s", res.StatusCode, res.Header.Get("Location"))
		}
		if _, body := s.send(ada, "GET", res.Header.Get("Location"), "", nil); !strings.Contains(body, "Renamed template nightly to nightly-2.") || !strings.Contains(body, `data-template="nightly-2"`) {
			t.Fatalf("the page after a rename: %s", body)
		}
		if res, _ := s.send(s.browser(), "DELETE", "/api/v1/projects/default/templates/eval", "", bearer); res.StatusCode != http.StatusNoContent {
			t.Fatalf("bob deletes his template = %d", res.StatusCode)
		}
		lea := s.user("lea", "default", models.RoleTeamLead)
		if res, _ := s.send(lea, "POST", "/projects/default/templates/nightly-2/delete", url.Values{"csrf_token": {s.csrf(lea, "/jobs/new")}}.Encode(), nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("a team lead deletes ada's template = %d", res.StatusCode)
		}
		if _, body := s.send(ada, "GET", "/projects/default/templates", "", nil); !strings.Contains(body, `data-testid="no-templates"`) {
			t.Fatalf("templates left after deleting both: %s", body)
		}

		// A viewer reads the page but saves nothing; an outsider may not fill the form from one.
		vic := s.user("vic", "default", models.RoleViewer)
		if res, _ := save(vic, "peek", jobForm(s.csrf(vic, "/jobs/new"))); res.StatusCode != http.StatusForbidden {
			t.Fatalf("a viewer saves a template = %d, want 403", res.StatusCode)
		}
		if res, _ := save(ada, "again", jobForm(token)); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("save again = %d", res.StatusCode)
		}
		out, _ := s.member("olga")
		if res, _ := s.send(out, "GET", "/jobs/new?project=default&template=again", "", nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("an outsider fills the form from a template = %d, want 403", res.StatusCode)
		}
		if n, err := st.JobCountsByState(ctx); err != nil || len(n) != 0 {
			t.Fatalf("templates submitted jobs: %v %v", n, err)
		}
	})
}
