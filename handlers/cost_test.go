package handlers_test

import (
	"context"
	"encoding/json"
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

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// costSite serves the cost routes to whoever as names, on a ledger of egress: detect
// (team vision) 1.00, 2.00 and 3.00 on 1-3 March, speech (team audio) 5.00 on 2-3 March.
func costSite(t *testing.T, st *store.Store) (get func(as, path string) (int, string, http.Header)) {
	t.Helper()
	ctx := context.Background()
	al := audit.New(st, time.Now)
	az := authz.New(st, al)
	acc, err := accounting.New(st, al, accounting.Config{})
	must(t, err)
	_, err = acc.CreateRate(ctx, models.CostRate{Resource: "egress", RateMicros: 1_000_000, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	must(t, err)
	users := map[string]*models.User{}
	for _, name := range []string{"root", "ada", "bob"} {
		u := &models.User{Username: name}
		must(t, st.CreateUser(ctx, u))
		users[name] = u
	}
	must(t, az.SetGlobalRoles(ctx, users["root"], true, false))
	projects := map[string]*models.Project{}
	for _, tp := range [][2]string{{"vision", "detect"}, {"audio", "speech"}} {
		tm := &models.Team{Name: tp[0]}
		must(t, st.CreateTeam(ctx, tm))
		p := &models.Project{TeamID: tm.ID, Name: tp[1]}
		must(t, st.CreateProject(ctx, p))
		projects[tp[1]] = p
	}
	must(t, az.SetProjectRole(ctx, users["ada"], projects["detect"], models.RoleMember))
	spend := func(project string, gib int64, day int) {
		at := time.Date(2026, 3, day, 9, 0, 0, 0, time.UTC)
		_, err := acc.RecordUsage(ctx, accounting.Usage{Resource: "egress", ProjectID: projects[project].ID, Bytes: gib << 30, From: at, To: at.Add(time.Hour)})
		must(t, err)
	}
	spend("detect", 1, 1)
	spend("detect", 2, 2)
	spend("detect", 3, 3)
	spend("speech", 5, 2)
	spend("speech", 5, 3)
	vision, err := st.TeamByName(ctx, "vision")
	must(t, err)
	_, err = acc.CreateBudget(ctx, accounting.BudgetInput{TeamID: &vision.ID, AmountMicros: 10_000_000})
	must(t, err)

	gin.SetMode(gin.ReleaseMode)
	tel, err := telemetry.New(st, telemetry.Config{})
	must(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gov, err := governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Log: log, Idle: tel}, governance.Config{})
	must(t, err)
	h := handlers.New(st, "test", log, handlers.Services{Authz: az, Audit: al, Accounting: acc, Governance: gov})
	servers := map[string]*httptest.Server{}
	for name, u := range users {
		r := gin.New()
		r.Use(func(c *gin.Context) { c.Set(handlers.UserKey, u) })
		r.GET("/cost", h.CostShow)
		r.GET("/cost.csv", h.CostExport)
		r.GET("/api/v1/cost", h.CostAPIShow)
		servers[name] = httptest.NewServer(r)
		t.Cleanup(servers[name].Close)
	}
	return func(as, path string) (int, string, http.Header) {
		res, err := http.Get(servers[as].URL + path)
		must(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
}

var (
	chartTotal = regexp.MustCompile(`data-testid="cost-chart" data-total="(\d+)"`)
	tableTotal = regexp.MustCompile(`data-testid="cost-table" data-total="(\d+)"`)
	barMicros  = regexp.MustCompile(`<rect [^>]*data-micros="(\d+)"`)
)

// The chart and the table beside it show the same total; each user sees only the
// projects where they read cost, admins everything; the CSV is the same view.
func TestCostPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		get := costSite(t, st)
		march := "&from=2026-03-01&to=2026-03-31"
		status, body, _ := get("root", "/cost?by=project&bucket=day"+march)
		if status != http.StatusOK {
			t.Fatalf("admin: %d %s", status, body)
		}
		chart, table := chartTotal.FindStringSubmatch(body), tableTotal.FindStringSubmatch(body)
		if chart == nil || table == nil || chart[1] != "16000000" || table[1] != "16000000" {
			t.Fatalf("admin chart total %v, table total %v; want both 16000000", chart, table)
		}
		var bars int64
		for _, m := range barMicros.FindAllStringSubmatch(body, -1) {
			var v int64
			for _, ch := range m[1] {
				v = v*10 + int64(ch-'0')
			}
			bars += v
		}
		if bars != 16_000_000 || !strings.Contains(body, `data-testid="cost-total">16.00<`) {
			t.Errorf("bars add up to %d, want 16000000 and a table total of 16.00", bars)
		}
		for _, want := range []string{"<th scope=\"col\">speech</th>", "<th scope=\"col\">detect</th>", "2026-03-03", "team vision", "Every team"} {
			if !strings.Contains(body, want) {
				t.Errorf("admin page lacks %q", want)
			}
		}

		status, body, _ = get("ada", "/cost?by=project"+march)
		if status != http.StatusOK || tableTotal.FindStringSubmatch(body)[1] != "6000000" || strings.Contains(body, "speech") ||
			!strings.Contains(body, "Spend of your projects: detect.") {
			t.Errorf("member page: %d, total %v, shows speech: %v", status, tableTotal.FindStringSubmatch(body), strings.Contains(body, "speech"))
		}
		status, body, _ = get("bob", "/cost?by=team"+march)
		if status != http.StatusOK || !strings.Contains(body, "You are in no project") || strings.Contains(body, "cost-chart") {
			t.Errorf("outsider page: %d, %s", status, body)
		}
		status, body, _ = get("ada", "/cost?from=March"+"&to=2026-03-31")
		if status != http.StatusBadRequest || !strings.Contains(body, "From: &#34;March&#34; is not a day") {
			t.Errorf("bad from: %d %s", status, body)
		}
		status, body, hdr := get("ada", "/cost.csv?by=project&bucket=day"+march)
		want := "day,project_key,project,amount,currency\n2026-03-01,1,detect,1.000000,USD\n2026-03-02,1,detect,2.000000,USD\n2026-03-03,1,detect,3.000000,USD\n"
		if status != http.StatusOK || body != want || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
			t.Errorf("member CSV: %d %q, want %q", status, body, want)
		}
		if status, body, _ := get("root", "/cost.csv?by=colour"+march); status != http.StatusBadRequest || !strings.Contains(body, "by: ") {
			t.Errorf("bad CSV: %d %s", status, body)
		}
	})
}

// GET /api/v1/cost is the cost page's view as JSON: the same scope for each user, the
// same totals, quantities where one resource is asked for, and bad filters refused by
// field.
func TestCostAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		get := costSite(t, st)
		type line struct {
			Bucket, Label, Quantity, Amount string
			Key                             int64
			AmountMicros                    int64 `json:"amount_micros"`
		}
		type view struct {
			From, To, By, Bucket, Resource, Unit, Total string
			All                                         bool
			NoRates                                     bool `json:"no_rates"`
			Projects                                    []string
			TotalMicros                                 int64 `json:"total_micros"`
			Rows                                        []line
		}
		read := func(as, path string) view {
			t.Helper()
			status, body, hdr := get(as, path)
			var v view
			if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &v) != nil {
				t.Fatalf("%s GET %s = %d %s", as, path, status, body)
			}
			return v
		}
		march := "&from=2026-03-01&to=2026-03-31"
		v := read("root", "/api/v1/cost?by=project&bucket=day"+march)
		if !v.All || v.NoRates || len(v.Projects) != 0 || v.TotalMicros != 16_000_000 || v.Total != "16.000000" || len(v.Rows) != 5 ||
			v.From != "2026-03-01" || v.To != "2026-03-31" || v.By != "project" || v.Bucket != "day" || v.Unit != "" {
			t.Fatalf("admin by project and day: %+v", v)
		}
		if r := v.Rows[0]; r.Bucket != "2026-03-01" || r.Label != "detect" || r.Key == 0 || r.AmountMicros != 1_000_000 || r.Amount != "1.000000" || r.Quantity != "" {
			t.Errorf("first row: %+v", r)
		}

		v = read("ada", "/api/v1/cost?by=project&bucket=&resource=egress"+march)
		want := []line{{Label: "detect", Quantity: "6.000", Amount: "6.000000", AmountMicros: 6_000_000}}
		if v.All || !slices.Equal(v.Projects, []string{"detect"}) || v.Unit != "gib" || v.TotalMicros != 6_000_000 || len(v.Rows) != 1 {
			t.Fatalf("member's totals of egress: %+v", v)
		}
		v.Rows[0].Key = 0
		if v.Rows[0] != want[0] {
			t.Errorf("member's row %+v, want %+v", v.Rows[0], want[0])
		}
		if v := read("bob", "/api/v1/cost?by=team"+march); v.All || v.Projects == nil || len(v.Projects) != 0 || v.Rows == nil || len(v.Rows) != 0 || v.Total != "0.000000" {
			t.Errorf("outsider: %+v", v)
		}
		for _, bad := range []struct{ query, field, says string }{
			{"?by=colour", "by", `"colour"`}, {"?bucket=hour", "bucket", `"hour"`}, {"?from=March", "from", `"March"`}, {"?to=2026-02-30", "to", `"2026-02-30"`},
			// The days as typed: to is the last day, not the day after it.
			{"?from=2026-03-02&to=2026-03-01", "to", "2026-03-01 is before from (2026-03-02)"}, {"?resource=gold", "resource", `"gold"`},
		} {
			status, body, _ := get("ada", "/api/v1/cost"+bad.query)
			var e struct{ Error handlers.APIError }
			if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &e) != nil || e.Error.Field != bad.field || e.Error.Code != "invalid" ||
				!strings.Contains(e.Error.Message, bad.says) {
				t.Errorf("GET /api/v1/cost%s = %d %s, want 400 on %s", bad.query, status, body, bad.field)
			}
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
