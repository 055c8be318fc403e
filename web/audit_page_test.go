package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var auditRow = regexp.MustCompile(`<tr data-event="(\d+)">`)

func eventIDs(body string) []string {
	var ids []string
	for _, m := range auditRow.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestAuditPageFiltersPagesAndExports(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		project, _ := st.ProjectByName(ctx, "default")
		// 60 job submissions by ada in the default project, a day ago.
		s.clock.advance(-24 * time.Hour)
		log := audit.New(st, s.clock.now)
		ada := audit.WithActor(ctx, audit.Actor{Name: "ada", Type: models.ActorUser, IP: "192.0.2.5", RequestID: "req-ada"})
		for i := range 60 {
			if err := log.Append(ada, audit.Entry{Action: "job.submitted", ObjectType: "job", ObjectID: fmt.Sprint(i), ProjectID: &project.ID, Detail: map[string]int{"gpus": 1}}); err != nil {
				t.Fatal(err)
			}
		}
		s.clock.advance(24 * time.Hour)
		total, _ := st.CountAuditEvents(ctx, store.AuditFilter{})

		res, body := s.send(admin, "GET", "/admin/audit", "", nil)
		ids := eventIDs(body)
		if res.StatusCode != 200 || len(ids) != 50 || ids[0] != fmt.Sprint(total) || !strings.Contains(body, `<a href="/admin/audit">Audit log</a>`) {
			t.Fatalf("audit page = %d with %d rows starting at %v (of %d)", res.StatusCode, len(ids), ids[:1], total)
		}
		// The head is there to be kept elsewhere, as verify prints it.
		newest, _ := st.AuditEventsBefore(ctx, store.AuditFilter{}, 0, 1)
		if head := fmt.Sprintf("%d:%s", newest[0].ID, newest[0].Hash); !strings.Contains(body, `data-testid="audit-head">Head of the chain: <code>`+head+`</code>`) {
			t.Errorf("the audit page does not show the head %s", head)
		}
		older := regexp.MustCompile(`href="(/admin/audit\?before=\d+)" rel="next"`).FindStringSubmatch(body)
		if older == nil {
			t.Fatal("no link to older events")
		}
		_, body = s.send(admin, "GET", strings.ReplaceAll(older[1], "&amp;", "&"), "", nil)
		if next := eventIDs(body); len(next) != int(total)-50 || next[0] != fmt.Sprint(total-50) {
			t.Fatalf("second page = %v", next)
		}
		today := s.clock.now().Format(time.DateOnly)
		yesterday := s.clock.now().Add(-24 * time.Hour).Format(time.DateOnly)
		_, body = s.send(admin, "GET", "/admin/audit?actor=ada&action=job.submitted&project=default&since="+yesterday+"&until="+yesterday, "", nil)
		if n := len(eventIDs(body)); n != 50 || !strings.Contains(body, "192.0.2.5") || !strings.Contains(body, "req-ada") || !strings.Contains(body, "job 59") {
			t.Fatalf("filtered page has %d rows", n)
		}
		_, body = s.send(admin, "GET", "/admin/audit?actor=ada&since="+today, "", nil)
		if n := len(eventIDs(body)); n != 0 || !strings.Contains(body, "No events match.") {
			t.Fatalf("ada today = %d rows", n)
		}
		// Signing in is in the log like everything else.
		_, body = s.send(admin, "GET", "/admin/audit?action=login", "", nil)
		if len(eventIDs(body)) != 1 || !strings.Contains(body, "admin") {
			t.Fatalf("the admin's sign-in is not on the audit page")
		}
		res, body = s.send(admin, "GET", "/admin/audit?since=last+tuesday", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Since: &#34;last tuesday&#34; is not a date") {
			t.Fatalf("a bad filter = %d", res.StatusCode)
		}
		res, body = s.send(admin, "GET", "/admin/audit?project=nope", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Project: no project is called &#34;nope&#34;") {
			t.Fatalf("an unknown project = %d", res.StatusCode)
		}
		// The export is JSON Lines of the same filter, oldest first, and is itself audited.
		res, body = s.send(admin, "GET", "/admin/audit/export?actor=ada&project=default", "", nil)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="gantry-audit-`) || len(lines) != 60 {
			t.Fatalf("export = %d %q, %d lines", res.StatusCode, res.Header.Get("Content-Type"), len(lines))
		}
		var first audit.Line
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Actor != "ada" || first.ObjectID != "0" || len(first.Hash) != 64 {
			t.Fatalf("first exported line = %s (%v)", lines[0], err)
		}
		exports, _ := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "audit.exported", Actor: "admin"}, 0, 2)
		if len(exports) != 1 || !strings.Contains(exports[0].Detail, `"actor":["ada"]`) {
			t.Fatalf("the export was audited as %+v", exports)
		}
		if _, err := log.Verify(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAuditPageIsForAdminsAndAuditors(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ctx := context.Background()
	for _, u := range []*models.User{{Username: "ida"}, {Username: "max"}} {
		if err := s.st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	ida, _ := s.st.UserByUsername(ctx, "ida")
	if err := s.az.SetGlobalRoles(ctx, ida, false, true); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"ida": http.StatusOK, "max": http.StatusForbidden} {
		u, _ := s.st.UserByUsername(ctx, name)
		cookie, _, err := s.id.StartSession(ctx, u, "", "")
		if err != nil {
			t.Fatal(err)
		}
		res, body := s.send(s.browser(), "GET", "/admin/audit", "", map[string]string{"Cookie": "gantry_session=" + cookie})
		if res.StatusCode != want {
			t.Errorf("%s on the audit page = %d, want %d", name, res.StatusCode, want)
		}
		if want == http.StatusForbidden && !strings.Contains(body, "You may not read the audit log") {
			t.Errorf("the refusal does not say why: %.400s", body)
		}
	}
}

// An event stored the old way, a template's spec with its secret values in clear (as
// SaveTemplate appended it before migration 0019), is shown masked on the audit page,
// in a console page's recent changes and in the export; a variable marked not secret
// and other details are shown as they are, and the chain still verifies.
func TestAuditShowsOldSecretValuesMasked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		project, _ := st.ProjectByName(ctx, "default")
		const hfToken, dbPassword = "hf_old-4471", "pw-9123"
		no := false
		spec := jobs.Spec{Project: "default", Name: "train", Command: []string{"python", "train.py"}, Env: map[string]jobs.EnvVar{
			"HF_TOKEN": jobs.Plain(hfToken), "DB_PASSWORD": jobs.Plain(dbPassword), "EPOCHS": jobs.Plain("3"),
			"PUBLIC_KEY": {Value: "ssh-ed25519 AAA", Secret: &no},
		}}
		log := audit.New(st, s.clock.now)
		ada := audit.WithActor(ctx, audit.Actor{Name: "ada", Type: models.ActorUser})
		for _, e := range []audit.Entry{
			{Action: "job_template.saved", ObjectType: "job_template", ObjectID: "7", ProjectID: &project.ID, Detail: map[string]any{"name": "nightly", "spec": spec}},
			{Action: "job.submitted", ObjectType: "job", ObjectID: "8", ProjectID: &project.ID, Detail: map[string]any{"name": "train", "note": "HF_TOKEN=" + hfToken}},
		} {
			if err := log.Append(ada, e); err != nil {
				t.Fatal(err)
			}
		}
		shown := `&#34;HF_TOKEN&#34;:&#34;********&#34;`
		for _, path := range []string{"/admin/audit", "/admin/projects/default"} {
			res, body := s.send(admin, "GET", path, "", nil)
			switch {
			case res.StatusCode != http.StatusOK:
				t.Fatalf("%s = %d", path, res.StatusCode)
			case strings.Contains(body, dbPassword) || !strings.Contains(body, shown) || !strings.Contains(body, `&#34;DB_PASSWORD&#34;:&#34;********&#34;`):
				t.Errorf("%s shows the template's secrets as %s", path, between(body, "nightly", "</code>"))
			case !strings.Contains(body, `&#34;PUBLIC_KEY&#34;:{&#34;value&#34;:&#34;ssh-ed25519 AAA&#34;,&#34;secret&#34;:false}`) || !strings.Contains(body, `&#34;EPOCHS&#34;:&#34;3&#34;`):
				t.Errorf("%s does not show the plain variables as they are: %s", path, between(body, "nightly", "</code>"))
			case !strings.Contains(body, `&#34;note&#34;:&#34;HF_TOKEN=`+hfToken+`&#34;`):
				t.Errorf("%s does not show a detail without env as it is", path)
			}
		}
		res, body := s.send(admin, "GET", "/admin/audit/export?actor=ada", "", nil)
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if res.StatusCode != http.StatusOK || len(lines) != 2 {
			t.Fatalf("export = %d, %q", res.StatusCode, body)
		}
		stored, _ := st.AuditEventsAfter(ctx, store.AuditFilter{Actor: "ada"}, 0, 2)
		for i, line := range lines {
			var l audit.Line
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			switch {
			case l.Action == "job_template.saved" && (strings.Contains(line, dbPassword) || strings.Contains(line, hfToken) || !l.DetailMasked ||
				!strings.Contains(line, `"HF_TOKEN":"********"`) || !strings.Contains(line, `"PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false}`)):
				t.Errorf("exported %s, want its secrets masked and said so", line)
			case l.Action == "job.submitted" && (string(l.Detail) != stored[i].Detail || l.DetailMasked):
				t.Errorf("exported %s, want the detail %s as it is", line, stored[i].Detail)
			}
		}
		if !strings.Contains(stored[0].Detail, hfToken) {
			t.Fatalf("the stored detail is %s: the test wants the old form, in clear", stored[0].Detail)
		}
		if _, err := log.Verify(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// between is the part of s from the first from to the next to after it, for messages.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}
