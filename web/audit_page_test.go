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
		if want == http.StatusForbidden && !strings.Contains(body, "you may not read audit on this Gantry") {
			t.Errorf("the refusal does not say why: %.400s", body)
		}
	}
}
