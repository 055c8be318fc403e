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

// The API reads its bodies as JSON whatever their Content-Type says: `curl -d` labels a
// body a form unless told otherwise, and read as one it left the handler nothing, which
// then said the body was empty. Such a job is submitted and such a template saved; a
// real form is refused as a body that is not JSON and stores nothing; a browser
// session's change through the API carries its CSRF token in the X-CSRF-Token header,
// a form field being read nowhere on the API.
func TestTheAPIReadsJSONWhateverItsContentType(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newJobsSite(t, st)
		write, _, err := s.id.CreateToken(ctx, mustUser(t, st, "admin"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		const form = "application/x-www-form-urlencoded"
		asForm := map[string]string{"Authorization": "Bearer " + write, "Content-Type": form}
		before, err := st.Jobs(ctx, store.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}

		res, body := s.send(s.browser(), "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "curl-d", "command": ["true"]}`, asForm)
		if res.StatusCode != http.StatusCreated || !strings.Contains(body, `"name":"curl-d"`) {
			t.Errorf("a job labelled a form = %d %.300s, want 201 and the job", res.StatusCode, body)
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/projects/vision-main/templates", `{"name": "nightly", "spec": {"name": "x", "command": ["true"]}}`, asForm)
		if res.StatusCode != http.StatusCreated {
			t.Errorf("a template labelled a form = %d %.300s, want 201", res.StatusCode, body)
		}

		res, body = s.send(s.browser(), "POST", "/api/v1/jobs", "project=vision-main&name=f&command=true", asForm)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != "body" || !strings.Contains(e.Error.Message, "not valid JSON") {
			t.Errorf("a form sent to the API = %d %s, want 400 saying the body is not JSON", res.StatusCode, body)
		}

		admin := s.signIn("admin", s.password)
		csrf := s.csrf(admin, "/jobs/new")
		res, body = s.send(admin, "POST", "/api/v1/jobs", "csrf_token="+csrf+"&project=vision-main&name=f&command=true", nil)
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusForbidden || e.Error.Code != "csrf" {
			t.Errorf("a session's form with its token, to the API = %d %s, want 403 csrf", res.StatusCode, body)
		}
		res, body = s.send(admin, "POST", "/api/v1/jobs", `{"project": "vision-main", "name": "from-a-session", "command": ["true"]}`,
			map[string]string{"X-CSRF-Token": csrf, "Content-Type": form})
		if res.StatusCode != http.StatusCreated || !strings.Contains(body, `"name":"from-a-session"`) {
			t.Errorf("a session's JSON with its token in the header = %d %.300s, want 201", res.StatusCode, body)
		}

		after, err := st.Jobs(ctx, store.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before)+2 {
			t.Errorf("%d jobs stored, want the 2 accepted", len(after)-len(before))
		}
	})
}
