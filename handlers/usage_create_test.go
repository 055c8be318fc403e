package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Usage from a meter outside Gantry is priced into the ledger and audited; a bad
// report is refused naming its field and charges nothing.
func TestUsageCreate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		al := audit.New(st, time.Now)
		acc, err := accounting.New(st, al, accounting.Config{})
		must(t, err)
		march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		_, err = acc.CreateRate(ctx, models.CostRate{Resource: "egress", RateMicros: 2_000_000, EffectiveFrom: march})
		must(t, err)
		root := &models.User{Username: "root", IsAdmin: true}
		must(t, st.CreateUser(ctx, root))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		detect := &models.Project{TeamID: team.ID, Name: "detect"}
		must(t, st.CreateProject(ctx, detect))
		other := &models.Project{TeamID: team.ID, Name: "other"}
		must(t, st.CreateProject(ctx, other))
		job := &models.Job{Name: "fetch", ProjectID: other.ID, UserID: root.ID, Command: `["true"]`, State: models.JobQueued}
		must(t, st.CreateJob(ctx, job, "root"))

		gin.SetMode(gin.ReleaseMode)
		h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{Accounting: acc, Audit: al})
		r := gin.New()
		r.Use(func(c *gin.Context) { c.Set(handlers.UserKey, root) })
		r.POST("/api/v1/usage", h.UsageCreate)
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		post := func(body string) (int, map[string]any) {
			res, err := http.Post(srv.URL+"/api/v1/usage", "application/json", strings.NewReader(body))
			must(t, err)
			defer res.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(res.Body).Decode(&out)
			return res.StatusCode, out
		}
		charged := func() int {
			entries, err := st.LedgerEntriesBetween(ctx, "egress", false, march, march.AddDate(0, 1, 0))
			must(t, err)
			return len(entries)
		}

		for _, c := range []struct{ body, field string }{
			{`{"resource": "egress", "project": "detect", "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z", "cost": 5}`, "cost"},
			{`{"resource": "egress", "project": "detect", "bytes": 1, "from": "yesterday", "to": "2026-03-02T01:00:00Z"}`, "from"},
			{`{"resource": "egress", "project": "detect", "bytes": "1", "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "bytes"},
			{`{"resource": "egress", "project": "detect", "bytes": 1e30, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "bytes"},
			{`{"resource": "egress", "project": "detect", "job_id": "x", "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "job_id"},
			{`[]`, "body"},
			{``, "body"},
			{`{"resource": "gpu", "project": "detect", "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "resource"},
			{`{"resource": "egress", "project": "nowhere", "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "project"},
			{`{"resource": "egress", "project": "detect", "bytes": -1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "bytes"},
			{`{"resource": "egress", "project": "detect", "bytes": 1, "from": "2026-03-02T01:00:00Z", "to": "2026-03-02T00:00:00Z"}`, "to"},
			{`{"resource": "egress", "project": "detect", "bytes": 1, "from": "2026-02-01T00:00:00Z", "to": "2026-02-01T01:00:00Z"}`, "resource"},
			{`{"resource": "egress", "project": "detect", "job_id": ` + strconv.FormatInt(job.ID, 10) + `, "bytes": 1, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`, "job_id"},
		} {
			status, out := post(c.body)
			e, _ := out["error"].(map[string]any)
			// Named in JSON's words, not Go's ("cannot unmarshal string into Go struct field usageBody.bytes").
			if msg, _ := e["message"].(string); status != http.StatusBadRequest || e["field"] != c.field || msg == "" || strings.Contains(msg, "Go ") || strings.Contains(msg, "usageBody") {
				t.Errorf("%s: %d %v, want 400 naming %s", c.body, status, out, c.field)
			}
		}
		if n := charged(); n != 0 {
			t.Fatalf("refused reports charged %d ledger entries", n)
		}

		// 3 GiB out over an hour at 2.00 per GiB.
		status, out := post(`{"resource": "egress", "project": "detect", "bytes": 3221225472, "from": "2026-03-02T00:00:00Z", "to": "2026-03-02T01:00:00Z"}`)
		if status != http.StatusCreated || out["amount_micros"] != float64(6_000_000) || out["project"] != "detect" || charged() != 1 {
			t.Fatalf("usage: %d %v, %d ledger entries; want 201 charging 6000000 in one entry", status, out, charged())
		}
		evs, err := st.AuditEventsAfter(ctx, store.AuditFilter{Action: "usage.recorded"}, 0, 10)
		must(t, err)
		if len(evs) != 1 || evs[0].ProjectID == nil || *evs[0].ProjectID != detect.ID || !strings.Contains(evs[0].Detail, `"amount_micros":6000000`) {
			t.Errorf("audit of the usage: %+v", evs)
		}
	})
}
