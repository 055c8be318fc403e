package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// jobsSite is a site with two teams' projects and jobs in both.
type jobsSite struct {
	*site
	tokens map[string]string  // username -> read-scoped API token
	ids    map[string][]int64 // project -> job ids, oldest first
}

// newJobsSite: ada is a member of vision-main, bob a viewer of speech-main, eve in no
// project; admin (bootstrapped) and audrey (auditor) read everything. vision-main
// gets 7 jobs by ada, speech-main 4 by bob; every third of vision's is cancelled.
func newJobsSite(t *testing.T, st *store.Store) *jobsSite {
	t.Helper()
	ctx := context.Background()
	s := &jobsSite{site: newSite(t, st, false), tokens: map[string]string{}, ids: map[string][]int64{}}
	users := map[string]*models.User{}
	for _, name := range []string{"ada", "bob", "eve", "audrey"} {
		u := &models.User{Username: name}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		users[name] = u
	}
	admin, err := st.UserByUsername(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	users["admin"] = admin
	projects := map[string]*models.Project{}
	for _, name := range []string{"vision", "speech"} {
		tm := &models.Team{Name: name}
		if err := st.CreateTeam(ctx, tm); err != nil {
			t.Fatal(err)
		}
		p := &models.Project{TeamID: tm.ID, Name: name + "-main"}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		projects[p.Name] = p
	}
	for _, err := range []error{
		s.az.SetProjectRole(ctx, users["ada"], projects["vision-main"], models.RoleMember),
		s.az.SetProjectRole(ctx, users["bob"], projects["speech-main"], models.RoleViewer),
		s.az.SetGlobalRoles(ctx, users["audrey"], false, true),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for i := range 11 {
		p, u := projects["vision-main"], users["ada"]
		if i >= 7 {
			p, u = projects["speech-main"], users["bob"]
		}
		j := &models.Job{Name: fmt.Sprintf("train-%02d", i), ProjectID: p.ID, UserID: u.ID, Command: `["true"]`,
			PriorityClass: "research", GPUs: i % 3, SubmittedAt: base.Add(time.Duration(i) * time.Minute)}
		if err := st.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
		if i < 7 && i%3 == 0 {
			if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		s.ids[p.Name] = append(s.ids[p.Name], j.ID)
	}
	for name, u := range users {
		secret, _, err := s.id.CreateToken(ctx, u, "list", identity.ScopeRead, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s.tokens[name] = secret
	}
	return s
}

type jobsList struct {
	Jobs []struct {
		ID      int64
		Name    string
		Project string
		User    string
		State   string
	}
	NextCursor *string `json:"next_cursor"`
}

type errorBody struct {
	Error struct{ Code, Message, Field string }
}

// list asks for one page as user; query is the query string.
func (s *jobsSite) list(user string, query url.Values) (int, jobsList, errorBody) {
	s.t.Helper()
	res, body := s.send(s.browser(), "GET", "/api/v1/jobs?"+query.Encode(), "", map[string]string{"Authorization": "Bearer " + s.tokens[user]})
	var l jobsList
	var e errorBody
	if res.ContentLength != int64(len(body)) || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		s.t.Errorf("list answered %d bytes as %q, with Content-Length %d", len(body), res.Header.Get("Content-Type"), res.ContentLength)
	}
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			s.t.Fatalf("list: %v in %s", err, body)
		}
	} else if err := json.Unmarshal([]byte(body), &e); err != nil {
		s.t.Fatalf("list refused with %d and no error body: %s", res.StatusCode, body)
	}
	return res.StatusCode, l, e
}

// all follows next_cursor from the first page to the last and returns every id.
func (s *jobsSite) all(user string, query url.Values) []int64 {
	s.t.Helper()
	var ids []int64
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	for pages := 0; ; pages++ {
		status, l, e := s.list(user, q)
		if status != http.StatusOK || pages > 20 {
			s.t.Fatalf("page %d of %v as %s: %d %+v", pages, query, user, status, e)
		}
		for _, j := range l.Jobs {
			ids = append(ids, j.ID)
		}
		if l.NextCursor == nil {
			return ids
		}
		q.Set("cursor", *l.NextCursor)
	}
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

func TestJobsAPIListsWhatTheCallerMayRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobsSite(t, st)
		vision, speech := s.ids["vision-main"], s.ids["speech-main"]
		everything := reversed(append(slices.Clone(vision), speech...))
		page := url.Values{"limit": {"3"}}
		for user, want := range map[string][]int64{
			"admin": everything, "audrey": everything, "ada": reversed(vision), "bob": reversed(speech), "eve": nil,
		} {
			if got := s.all(user, page); !slices.Equal(got, want) {
				t.Errorf("%s sees %v, want %v", user, got, want)
			}
		}

		status, l, _ := s.list("ada", url.Values{"limit": {"2"}})
		if status != http.StatusOK || len(l.Jobs) != 2 || l.Jobs[0].Project != "vision-main" || l.Jobs[0].User != "ada" || l.Jobs[0].Name != "train-06" || l.NextCursor == nil {
			t.Fatalf("first page = %d %+v", status, l)
		}

		cancelled := []int64{vision[6], vision[3], vision[0]}
		for name, tc := range map[string]struct {
			user  string
			query url.Values
			want  []int64
		}{
			"one state":           {"admin", url.Values{"state": {"cancelled"}}, cancelled},
			"states, comma list":  {"admin", url.Values{"state": {"cancelled,queued"}, "project": {"vision-main"}}, reversed(vision)},
			"states, repeated":    {"admin", url.Values{"state": {"cancelled", "queued"}, "project": {"speech-main"}}, reversed(speech)},
			"project":             {"admin", url.Values{"project": {"speech-main"}}, reversed(speech)},
			"user":                {"audrey", url.Values{"user": {"bob"}}, reversed(speech)},
			"user outside scope":  {"ada", url.Values{"user": {"bob"}}, nil},
			"oldest first":        {"ada", url.Values{"sort": {"submitted_at"}}, vision},
			"by name":             {"admin", url.Values{"sort": {"name"}, "project": {"vision-main"}}, vision},
			"by name, last first": {"admin", url.Values{"sort": {"-name"}, "project": {"speech-main"}}, reversed(speech)},
			"most GPUs":           {"ada", url.Values{"sort": {"-gpus"}}, []int64{vision[5], vision[2], vision[4], vision[1], vision[6], vision[3], vision[0]}},
			"no such image yet":   {"admin", url.Values{"image": {"ghcr.io/lab/train:v1"}}, nil},
		} {
			q := url.Values{"limit": {"2"}}
			for k, v := range tc.query {
				q[k] = v
			}
			if got := s.all(tc.user, q); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", name, got, tc.want)
			}
		}

		now := time.Now().UTC()
		inRange := s.all("admin", url.Values{"from": {now.Add(-time.Hour + 150*time.Second).Format(time.RFC3339)}, "to": {now.Add(-time.Hour + 330*time.Second).Format(time.RFC3339)}})
		if !slices.Equal(inRange, []int64{vision[5], vision[4], vision[3]}) {
			t.Errorf("time range: %v, want jobs 3 to 5 of vision", inRange)
		}
		if today := s.all("admin", url.Values{"from": {now.Add(-2 * time.Hour).Format(time.DateOnly)}, "to": {now.Format(time.DateOnly)}}); len(today) != 11 {
			t.Errorf("from the day before through today: %d jobs, want 11", len(today))
		}
	})
}

func TestJobsAPIRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobsSite(t, st)
	_, first, _ := s.list("ada", url.Values{"limit": {"2"}})
	byName, _, _ := s.list("ada", url.Values{"limit": {"2"}, "sort": {"name"}})
	if first.NextCursor == nil || byName != http.StatusOK {
		t.Fatal("no cursor to misuse")
	}
	for name, tc := range map[string]struct {
		user  string
		query url.Values
		field string
	}{
		"unknown state":            {"ada", url.Values{"state": {"queued,sleeping"}}, "state"},
		"unknown project":          {"ada", url.Values{"project": {"nope"}}, "project"},
		"foreign project":          {"ada", url.Values{"project": {"speech-main"}}, "project"},
		"unknown user":             {"admin", url.Values{"user": {"mallory"}}, "user"},
		"not an image":             {"admin", url.Values{"image": {"Not An Image!"}}, "image"},
		"not a time":               {"admin", url.Values{"from": {"yesterday"}}, "from"},
		"range backwards":          {"admin", url.Values{"from": {"2026-03-02"}, "to": {"2026-03-01"}}, "to"},
		"unknown sort":             {"admin", url.Values{"sort": {"command"}}, "sort"},
		"limit zero":               {"admin", url.Values{"limit": {"0"}}, "limit"},
		"limit too big":            {"admin", url.Values{"limit": {"201"}}, "limit"},
		"limit not a number":       {"admin", url.Values{"limit": {"ten"}}, "limit"},
		"garbage cursor":           {"ada", url.Values{"cursor": {"!!!"}}, "cursor"},
		"base64 but not a cursor":  {"ada", url.Values{"cursor": {"bm90IGpzb24"}}, "cursor"},
		"forged cursor with a NUL": {"ada", url.Values{"sort": {"name"}, "cursor": {base64.RawURLEncoding.EncodeToString([]byte(`{"s":"name","t":"2026-03-01T00:00:00Z","n":"a\u0000","id":1}`))}}, "cursor"},
		"cursor of another sort":   {"ada", url.Values{"cursor": {*first.NextCursor}, "sort": {"name"}}, "cursor"},
	} {
		status, _, e := s.list(tc.user, tc.query)
		if status != http.StatusBadRequest || e.Error.Field != tc.field || e.Error.Code != "invalid" || e.Error.Message == "" {
			t.Errorf("%s: %d %+v, want 400 naming %s", name, status, e, tc.field)
		}
	}
}

// Errors of the gate on /api/v1 routes carry the same body as the handlers', with the
// field at fault.
func TestAPIErrorsNameTheField(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobsSite(t, st)
	write, _, err := s.id.CreateToken(context.Background(), mustUser(t, st, "ada"), "w", identity.ScopeWrite, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		field              string
	}{
		"job id not a number":  {"GET", "/api/v1/jobs/abc", "", http.StatusBadRequest, "id"},
		"no such job":          {"GET", "/api/v1/jobs/99999", "", http.StatusNotFound, "id"},
		"body not JSON":        {"POST", "/api/v1/jobs", "{project", http.StatusBadRequest, "body"},
		"no project in body":   {"POST", "/api/v1/jobs", `{"name": "x"}`, http.StatusBadRequest, "project"},
		"unknown project":      {"POST", "/api/v1/jobs", `{"project": "nope"}`, http.StatusNotFound, "project"},
		"project not a string": {"POST", "/api/v1/jobs", `{"project": 5}`, http.StatusBadRequest, "project"},
		"body not an object":   {"POST", "/api/v1/jobs", `["default"]`, http.StatusBadRequest, "body"},
		"body a string":        {"POST", "/api/v1/jobs", `"default"`, http.StatusBadRequest, "body"},
		"body empty":           {"POST", "/api/v1/jobs", ``, http.StatusBadRequest, "body"},
		"truncated body":       {"POST", "/api/v1/jobs", `{"project": "vision-main"`, http.StatusBadRequest, "body"},
	} {
		res, body := s.send(s.browser(), tc.method, tc.path, tc.body, map[string]string{"Authorization": "Bearer " + write, "Content-Type": "application/json"})
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != tc.status || e.Error.Field != tc.field || e.Error.Code == "" || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d naming %s", name, res.StatusCode, body, tc.status, tc.field)
		}
		// In JSON's words: not Go's types.
		if strings.Contains(e.Error.Message, "Go ") || strings.Contains(e.Error.Message, "struct") {
			t.Errorf("%s: the message speaks Go: %s", name, e.Error.Message)
		}
	}
}

func mustUser(t *testing.T, st *store.Store, name string) *models.User {
	t.Helper()
	u, err := st.UserByUsername(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
