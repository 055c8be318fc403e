package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

var alertLink = regexp.MustCompile(`href="/alerts/(\d+)">#`)

// listed returns the ids of the alerts the alerts page lists for c.
func (s *site) listed(c *http.Client) []string {
	s.t.Helper()
	res, body := s.send(c, "GET", "/alerts", "", nil)
	if res.StatusCode != http.StatusOK {
		s.t.Fatalf("alerts page = %d", res.StatusCode)
	}
	var ids []string
	for _, m := range alertLink.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return ids
}

// The alerts page through a known history: team vision (projects detect, track) and
// team audio (project speech) each spent 30.00 today against a mean of 10.00, so the
// team-cost-spike rule (acting: hold) fires for both and holds their queued jobs;
// speech's budget crossed 100% under a dry-run rule, which lists the job it would have
// held. Each user sees the alerts about their projects, their team's if they lead it;
// only admins and the team's leads handle them; every change is audited.
func TestAlertsPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		ctx := audit.WithActor(context.Background(), audit.System())
		admin := s.signIn("admin", s.password)
		lena, lenaUser := s.member("lena")
		ada, adaUser := s.member("ada")
		bob, bobUser := s.member("bob")
		outsider, _ := s.member("olga")
		projects := map[string]*models.Project{}
		for _, tp := range [][2]string{{"vision", "detect"}, {"vision", "track"}, {"audio", "speech"}} {
			team, err := st.TeamByName(ctx, tp[0])
			if err != nil {
				team = &models.Team{Name: tp[0]}
				must(t, st.CreateTeam(ctx, team))
			}
			p := &models.Project{TeamID: team.ID, Name: tp[1]}
			must(t, st.CreateProject(ctx, p))
			projects[tp[1]] = p
		}
		must(t, s.az.SetProjectRole(ctx, lenaUser, projects["detect"], models.RoleTeamLead))
		must(t, s.az.SetProjectRole(ctx, adaUser, projects["detect"], models.RoleMember))
		must(t, s.az.SetProjectRole(ctx, bobUser, projects["speech"], models.RoleMember))
		queued := map[string]*models.Job{}
		for project, owner := range map[string]*models.User{"track": adaUser, "speech": bobUser} {
			j := &models.Job{Name: project + "-sweep", ProjectID: projects[project].ID, UserID: owner.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
			must(t, st.CreateJob(ctx, j, "test"))
			queued[project] = j
		}

		al := audit.New(st, time.Now)
		acc, err := accounting.New(st, al, accounting.Config{})
		must(t, err)
		tel, err := telemetry.New(st, telemetry.Config{})
		must(t, err)
		gov, err := governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, governance.Config{})
		must(t, err)
		_, err = acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceEgress, RateMicros: 1_000_000, EffectiveFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
		must(t, err)
		now := time.Now().UTC()
		today := now.Truncate(24 * time.Hour)
		spend := func(project string, units int64, at time.Time) {
			_, err := acc.RecordUsage(ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: projects[project].ID, Bytes: units << 30, From: at, To: at.Add(time.Second)})
			must(t, err)
		}
		for d := 1; d <= 7; d++ {
			spend("detect", 10, today.AddDate(0, 0, -d))
			spend("speech", 10, today.AddDate(0, 0, -d))
		}
		spend("detect", 30, today)
		spend("speech", 30, today)
		_, err = acc.CreateBudget(ctx, accounting.BudgetInput{ProjectID: &projects["speech"].ID, AmountMicros: 20_000_000, Thresholds: []int{100}})
		must(t, err)
		for _, r := range []governance.RuleInput{
			{Name: "team-cost-spike", Metric: governance.MetricTeamCostRatio, Threshold: 200, WindowSec: 7 * 86400, Action: governance.ActionHold, Enabled: true},
			{Name: "budget-threshold", Metric: governance.MetricBudgetThreshold, Action: governance.ActionHold, DryRun: true, Enabled: true},
			{Name: "budget-forecast", Metric: governance.MetricBudgetForecast, Threshold: 100, WindowSec: 7 * 86400, Action: governance.ActionNotify},
		} {
			rules, err := gov.Rules(ctx)
			must(t, err)
			for _, have := range rules {
				if have.Name == r.Name {
					_, err := gov.UpdateRule(ctx, have.ID, r)
					must(t, err)
				}
			}
		}
		rep, err := gov.Evaluate(ctx, now)
		must(t, err)
		ids := map[string]string{} // "team vision", "team audio", "budget"
		for _, a := range rep.Raised {
			switch {
			case a.Scope == governance.ScopeTeam && a.ScopeID == projects["detect"].TeamID:
				ids["vision"] = fmt.Sprint(a.ID)
			case a.Scope == governance.ScopeTeam:
				ids["audio"] = fmt.Sprint(a.ID)
			case a.Scope == governance.ScopeBudget:
				ids["budget"] = fmt.Sprint(a.ID)
			}
		}
		if len(rep.Raised) != 3 || len(ids) != 3 || len(rep.Problems) != 0 {
			t.Fatalf("raised %+v (%v), want the two team spikes and the budget", rep.Raised, rep.Problems)
		}
		sorted := func(keys ...string) []string {
			var out []string
			for _, k := range keys {
				out = append(out, ids[k])
			}
			slices.Sort(out)
			return out
		}
		for _, c := range []struct {
			who  string
			c    *http.Client
			want []string
		}{
			{"admin", admin, sorted("vision", "audio", "budget")},
			{"lena (leads vision through detect)", lena, sorted("vision")},
			{"ada (member of detect)", ada, sorted("vision")},
			{"bob (member of speech)", bob, sorted("audio", "budget")},
			{"olga (no project)", outsider, nil},
		} {
			if got := s.listed(c.c); !slices.Equal(got, c.want) {
				t.Errorf("%s sees alerts %v, want %v", c.who, got, c.want)
			}
		}

		// The dry run says what it would have done, with the evidence in money.
		res, body := s.send(bob, "GET", "/alerts/"+ids["budget"], "", nil)
		for _, want := range []string{"Dry run: hold would have changed 1 job(s); nothing was changed", "speech-sweep (#" + fmt.Sprint(queued["speech"].ID) + ")",
			"<th scope=\"row\">budget_micros</th><td class=\"num\">20.00 USD</td>", "budget of project speech"} {
			if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("budget alert for bob lacks %q", want)
			}
		}
		if strings.Contains(body, "Handle it") || strings.Contains(body, "Revert this action") {
			t.Error("a member is offered to handle the alert")
		}
		if got, _ := st.JobByID(ctx, queued["speech"].ID); got.State != models.JobHeld {
			t.Errorf("speech's job is %s, want held by the team rule (not by the dry run)", got.State)
		}
		if res, _ := s.send(lena, "GET", "/alerts/"+ids["audio"], "", nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("lena opens audio's alert: %d, want 404", res.StatusCode)
		}
		// A change to an alert the user may not see is answered as for one that does not
		// exist, and audited with the true reason; merely opening it is not audited.
		if n := s.denials("GET /alerts/" + ids["audio"]); n != 0 {
			t.Errorf("opening an alert one may not see audited %d refusals, want none", n)
		}
		hidden := "/alerts/" + ids["audio"] + "/acknowledge"
		status, _, hiddenBody := s.post(lena, "/alerts", hidden, url.Values{})
		_, _, missingBody := s.post(lena, "/alerts", "/alerts/999999/acknowledge", url.Values{})
		if status != http.StatusNotFound || strings.ReplaceAll(hiddenBody, "alert "+ids["audio"]+" ", "alert N ") != strings.ReplaceAll(missingBody, "alert 999999 ", "alert N ") {
			t.Errorf("lena acknowledges audio's alert: %d, want 404 worded as for an alert that does not exist", status)
		}
		if n := s.denials("POST " + hidden); n != 1 {
			t.Errorf("acknowledging an alert one may not see audited %d refusals, want 1", n)
		}
		if n := s.denials("POST /alerts/999999/acknowledge"); n != 0 {
			t.Errorf("acknowledging an alert that does not exist audited %d refusals, want none", n)
		}
		denied, err := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "access.denied"}, 0, 10)
		must(t, err)
		if len(denied) == 0 || denied[0].ObjectID != "POST "+hidden || denied[0].Actor != "lena" ||
			!strings.Contains(denied[0].Detail, `"status":404`) || !strings.Contains(denied[0].Detail, "about team audio, which the caller may not see") {
			t.Errorf("the refusal was audited as %+v", denied)
		}
		if a, _, err := gov.AlertByID(ctx, mustID(t, ids["audio"])); err != nil || a.AckedAt != nil {
			t.Errorf("audio's alert after lena's refused acknowledgement: %+v, %v", a, err)
		}
		if status, _, _ := s.post(ada, "/alerts/"+ids["vision"], "/alerts/"+ids["vision"]+"/acknowledge", url.Values{}); status != http.StatusForbidden {
			t.Errorf("a member acknowledges: %d, want 403", status)
		}

		vision := "/alerts/" + ids["vision"]
		_, body = s.send(lena, "GET", vision, "", nil)
		for _, want := range []string{"Action: hold changed 1 job(s)", "track-sweep", "<th scope=\"row\">today_micros</th><td class=\"num\">30.00 USD</td>",
			"<th scope=\"row\">mean_daily_micros</th><td class=\"num\">10.00 USD</td>", "Revert this action", "Acknowledge: I am on it"} {
			if !strings.Contains(body, want) {
				t.Errorf("vision's alert for its lead lacks %q", want)
			}
		}
		steps := []struct {
			path   string
			form   url.Values
			status int
			says   string
		}{
			{"/acknowledge", url.Values{}, http.StatusSeeOther, "Acknowledged"},
			{"/silence", url.Values{"for": {"forever"}}, http.StatusBadRequest, "For: &#34;forever&#34; is not a choice"},
			{"/silence", url.Values{"for": {"7d"}}, http.StatusSeeOther, "Silenced until"},
			{"/revert", url.Values{}, http.StatusSeeOther, "Reverted"},
			{"/revert", url.Values{}, http.StatusBadRequest, "was reverted at"},
			{"/resolve", url.Values{}, http.StatusSeeOther, "Resolved"},
		}
		for _, st := range steps {
			status, notice, body := s.post(lena, vision, vision+st.path, st.form)
			if status != st.status || !strings.Contains(notice+body, st.says) {
				t.Errorf("%s %v: %d %q, want %d saying %q", st.path, st.form, status, notice, st.status, st.says)
			}
		}
		visionID, _ := strconv.ParseInt(ids["vision"], 10, 64)
		a, _, err := gov.AlertByID(ctx, visionID)
		must(t, err)
		if a.State != governance.StateResolved || a.AckedByID == nil || *a.AckedByID != lenaUser.ID || a.SilencedUntil == nil ||
			a.SilencedUntil.Sub(now) < 7*24*time.Hour-time.Minute || a.SilencedUntil.Sub(now) > 7*24*time.Hour+time.Minute {
			t.Errorf("vision's alert after its lead handled it = %+v", a)
		}
		if got, _ := st.JobByID(ctx, queued["track"].ID); got.State != models.JobQueued {
			t.Errorf("track's job is %s after the revert, want queued", got.State)
		}
		if got := strings.Join(s.audited("alert."), " ") + " " + strings.Join(s.audited("governance.action.reverted"), " "); got !=
			"alert.raised:system alert.raised:system alert.raised:system alert.acknowledged:lena alert.silenced:lena alert.resolved:lena governance.action.reverted:lena" {
			t.Errorf("audited %q", got)
		}
	})
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
