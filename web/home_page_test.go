package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Home shows a user their jobs, their team's spend and quota use this month, and what
// concerns them; empty parts say what to do next.
func TestHomePage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		olga, _ := s.member("olga")
		if _, body := s.send(olga, "GET", "/", "", nil); !strings.Contains(body, "You are in no project where you may run jobs") || !strings.Contains(body, "You are in no team yet") {
			t.Fatalf("home of a user without a project: %s", body)
		}
		ada := s.user("ada", "default", models.RoleMember)
		if _, body := s.send(ada, "GET", "/", "", nil); !strings.Contains(body, "You have no jobs yet. <a href=\"/jobs/new\">Submit your first job</a>") ||
			!strings.Contains(body, "No GPU quota: the team uses what is free.") ||
			!strings.Contains(body, "No cost rates are set, so nothing is charged. An admin sets them.") || strings.Contains(body, "Spent this month") {
			t.Fatalf("home of a new member, no rates set: %s", body)
		}
		// An admin in the team is told where to set them.
		admin := s.signIn("admin", s.password)
		if err := s.az.SetProjectRole(ctx, userByName(t, st, "admin"), projectByName(t, st, "default"), models.RoleMember); err != nil {
			t.Fatal(err)
		}
		if _, body := s.send(admin, "GET", "/", "", nil); !strings.Contains(body, `No cost rates are set, so nothing is charged. <a href="/admin/cost/rates">Set them on the rates page</a>.`) {
			t.Fatalf("home of an admin, no rates set: %s", body)
		}

		res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
		if m := locationJob.FindStringSubmatch(res.Header.Get("Location")); m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		s.disp.Tick(ctx)
		team, err := st.TeamByName(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveQuota(ctx, &models.Quota{TeamID: team.ID, QuotaLimits: models.QuotaLimits{NominalMilli: 2000}}); err != nil {
			t.Fatal(err)
		}
		acc := mustAccounting(t, st)
		month := time.Date(time.Now().UTC().Year(), time.Now().UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
		if _, err := acc.CreateRate(ctx, models.CostRate{Resource: "egress", RateMicros: 1_000_000, EffectiveFrom: month.AddDate(0, -1, 0)}); err != nil {
			t.Fatal(err)
		}
		project := projectByName(t, st, "default")
		if _, err := acc.RecordUsage(ctx, accounting.Usage{Resource: "egress", ProjectID: project.ID, Bytes: 3 << 30, From: month, To: month.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := acc.CreateBudget(ctx, accounting.BudgetInput{TeamID: &team.ID, AmountMicros: 5000 * accounting.MicrosPerUnit}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateAlertOnce(ctx, &models.Alert{RuleID: 1, Scope: "team", ScopeID: team.ID, State: "firing", Fingerprint: "home-test",
			Evidence: `{"summary": "team default spent 3.00 today, 300% of its mean"}`, FiredAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateNotification(ctx, &models.Notification{UserID: userByName(t, st, "ada").ID, Kind: "feedback", Title: "Your feedback was answered", Body: "Two more A100 nodes arrive in January.", Link: "/feedback/1"}); err != nil {
			t.Fatal(err)
		}
		_, body := s.send(ada, "GET", "/", "", nil)
		for _, want := range []string{
			`data-testid="active"`, "train-1", "◷ queued", "the cluster has no nodes",
			`data-testid="team-spend">3.00</strong> USD<`, "Budget 5000.00; forecast ", " (USD)", "any model: 0 of 2 GPUs in use",
			"team default spent 3.00 today, 300% of its mean", "Your feedback was answered", `href="/feedback/1"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("home lacks %q", want)
			}
		}
		if strings.Contains(body, "You have no jobs yet") || strings.Contains(body, "No cost rates are set") {
			t.Error("home says there are no jobs, or no rates")
		}
		// Another team's alert does not concern ada.
		if _, body := s.send(olga, "GET", "/", "", nil); strings.Contains(body, "300% of its mean") || strings.Contains(body, "train-1") {
			t.Error("a user outside the team sees its alert or jobs")
		}
	})
}

// The database and its schema version are for those who run the platform: an admin and
// an auditor see them on home, a member does not.
func TestHomeShowsTheDatabaseToAdminsAndAuditorsOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		status, err := st.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("Database: %s, schema version %d.", st.Dialect(), status.Current)
		auditor, auditorUser := s.member("audrey")
		if err := s.az.SetGlobalRoles(ctx, auditorUser, false, true); err != nil {
			t.Fatal(err)
		}
		browsers := map[string]*http.Client{
			"admin":   s.signIn("admin", s.password),
			"auditor": auditor,
			"member":  s.user("ada", "default", models.RoleMember),
		}
		for who, c := range browsers {
			res, body := s.send(c, "GET", "/", "", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("home of the %s = %d", who, res.StatusCode)
			}
			if shown := strings.Contains(body, line); shown != (who != "member") {
				t.Errorf("home of the %s shows %q: %v", who, line, shown)
			}
		}
	})
}
