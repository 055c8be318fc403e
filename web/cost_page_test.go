package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// costDay is the day of the cost page's history.
var costDay = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// costPage is the cost page of costDay, by project.
const costPage = "/cost?by=project&bucket=day&from=2026-03-02&to=2026-03-02"

// costHistory is a known day on node n1 (GPU g0 an A100-80GB at 4.00 an hour, g1 an
// L4-24GB at 1.00): job a (project detect, team vision) holds g0 00:00-02:00 (8.00),
// idle half of its 120 telemetry minutes; b (track, vision) g1 00:00-03:00 (3.00), busy;
// c (speech, audio) g0 02:00-03:00 (4.00) without telemetry. lena leads detect (so she
// sees team vision), ada is a member of detect.
func costHistory(t *testing.T, s *site) (lena, ada *http.Client) {
	t.Helper()
	ctx := audit.WithActor(context.Background(), audit.System())
	st := s.st
	lena, lenaUser := s.member("lena")
	ada, adaUser := s.member("ada")
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
	acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
	must(t, err)
	for model, micros := range map[string]int64{"A100-80GB": 4_000_000, "L4-24GB": 1_000_000} {
		_, err := acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceGPU, GPUModel: model, RateMicros: micros, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		must(t, err)
	}
	node := &models.Node{Name: "n1", State: models.NodeReady}
	must(t, st.CreateNode(ctx, node, []models.GPUDevice{{Index: 0, UUID: "g0", Model: "A100-80GB"}, {Index: 1, UUID: "g1", Model: "L4-24GB"}}))
	for _, j := range []struct {
		name, project, gpu string
		from, to           int
		minutes, idle      int
	}{{"a", "detect", "g0", 0, 2, 120, 60}, {"b", "track", "g1", 0, 3, 180, 0}, {"c", "speech", "g0", 2, 3, 0, 0}} {
		job := &models.Job{Name: j.name, ProjectID: projects[j.project].ID, UserID: adaUser.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
		must(t, st.CreateJob(ctx, job, "test"))
		from, to := costDay.Add(time.Duration(j.from)*time.Hour), costDay.Add(time.Duration(j.to)*time.Hour)
		must(t, st.CreateAllocations(ctx, []models.Allocation{{JobID: job.ID, Attempt: 1, NodeID: node.ID, Devices: `[{"uuid":"` + j.gpu + `","milli":1000}]`,
			State: models.AllocEnded, StartedAt: &from, EndedAt: &to}}))
		var rows []models.TelemetrySample
		for i := range j.minutes {
			util := 70.0
			if i < j.idle {
				util = 1
			}
			rows = append(rows, models.TelemetrySample{NodeID: node.ID, DeviceUUID: j.gpu, JobID: &job.ID, At: from.Add(time.Duration(i) * time.Minute),
				Resolution: models.ResolutionMinute, UtilPct: util, UtilMinPct: util, UtilMaxPct: util, Samples: 4, Reported: models.ReportedUtil})
		}
		if len(rows) > 0 {
			must(t, st.InsertTelemetry(ctx, rows))
		}
	}
	if _, err := acc.Meter(ctx, costDay.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	return lena, ada
}

// The cost page of a known day: the spend per project, per GPU model and the idle
// cost to the cent; a team lead sees every project of the team, a member their own.
func TestCostPagePanels(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		lena, ada := costHistory(t, s)
		_, body := s.send(admin, "GET", costPage, "", nil)
		for _, want := range []string{
			`data-testid="cost-chart" data-total="15000000"`, `data-testid="cost-total">15.00<`,
			// Every amount's currency: the chart's heading and title, the table's caption, the columns.
			`<h2 id="spend-title">Spend over time, in USD</h2>`, `<title id="chart-title">Spend per period in USD, stacked</title>`,
			"<caption>The numbers of the chart, in USD</caption>", `<th scope="col">Cost (USD)</th>`,
			"<tr><td>A100-80GB</td><td class=\"num\">3.0</td><td class=\"num\">12.00</td></tr>",
			"<tr><td>L4-24GB</td><td class=\"num\">3.0</td><td class=\"num\">3.00</td></tr>",
			// Most idle cost first, then the most GPU cost.
			"<tr><td>detect</td><td class=\"num\">8.00</td><td class=\"num\">8.00</td><td class=\"num\">2.0</td><td class=\"num\">50.0%</td><td class=\"num\">4.00</td></tr>" +
				"<tr><td>speech</td><td class=\"num\">4.00</td><td class=\"num\">0.00</td><td class=\"num\">0.0</td><td class=\"num\">0.0%</td><td class=\"num\">0.00</td></tr>" +
				"<tr><td>track</td><td class=\"num\">3.00</td><td class=\"num\">3.00</td><td class=\"num\">3.0</td><td class=\"num\">0.0%</td><td class=\"num\">0.00</td></tr>",
			`data-testid="idle-total">4.00<`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("admin's cost page lacks %s", want)
			}
		}
		if strings.Contains(body, "No cost rates are set") {
			t.Error("the cost page says no rates are set while they are")
		}
		_, body = s.send(lena, "GET", costPage, "", nil)
		if !strings.Contains(body, "Spend of your projects: detect, track.") || !strings.Contains(body, `data-testid="cost-total">11.00<`) ||
			strings.Contains(body, "speech") || !strings.Contains(body, `data-testid="idle-total">4.00<`) {
			t.Errorf("the lead of detect does not see team vision's cost (11.00, idle 4.00) alone")
		}
		_, body = s.send(ada, "GET", costPage, "", nil)
		if !strings.Contains(body, "Spend of your projects: detect.") || !strings.Contains(body, `data-testid="cost-total">8.00<`) ||
			strings.Contains(body, "<td>track</td>") || !strings.Contains(body, "<tr><td>A100-80GB</td><td class=\"num\">2.0</td><td class=\"num\">8.00</td></tr>") {
			t.Errorf("a member of detect does not see detect's cost (8.00) alone")
		}
	})
}

// In a real browser the chart's bars, its total and the table beside it show the same
// amount, and the table's total cell says it in money.
func TestCostPageInBrowser(t *testing.T) {
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	costHistory(t, s)
	ctx := browsertest.New(t)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/login"), chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "admin"), chromedp.SendKeys("#password", s.password), browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible(".user-menu"),
		browsertest.Navigate(s.srv.URL+costPage), chromedp.WaitVisible(`[data-testid="cost-chart"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Chart, Table, Bars, Drawn float64
		Cell                      string
	}
	got = run(t, ctx, chromedp.Evaluate[struct {
		Chart, Table, Bars, Drawn float64
		Cell                      string
	}](`(() => {
		const chart = document.querySelector('[data-testid="cost-chart"]');
		const bars = [...chart.querySelectorAll('rect[data-micros]')];
		return {
			Chart: Number(chart.dataset.total),
			Table: Number(document.querySelector('[data-testid="cost-table"]').dataset.total),
			Bars: bars.reduce((sum, r) => sum + Number(r.dataset.micros), 0),
			Drawn: bars.filter(r => r.getBBox().height > 0).length,
			Cell: document.querySelector('[data-testid="cost-total"]').textContent.trim(),
		};
	})()`))
	if got.Chart != 15_000_000 || got.Table != got.Chart || got.Bars != got.Chart || got.Cell != "15.00" || got.Drawn == 0 {
		t.Errorf("in the browser: chart %v, table %v, bars %v (%v drawn), total cell %q; want 15000000 everywhere and 15.00", got.Chart, got.Table, got.Bars, got.Drawn, got.Cell)
	}
	browsertest.Screenshot(t, ctx, "cost")
}
