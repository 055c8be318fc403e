package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/web"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// webhookSink is a real HTTP receiver that keeps the JSON bodies posted to it.
type webhookSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newWebhookSink(t *testing.T) *webhookSink {
	h := &webhookSink{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "want JSON", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// alertOf returns the alert posted for rule, if one was.
func (h *webhookSink) alertOf(rule string) (map[string]any, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bodies {
		if a, _ := b["alert"].(map[string]any); a["rule"] == rule {
			text, _ := b["text"].(string)
			return a, text, true
		}
	}
	return nil, "", false
}

// steps runs the browser steps within 20 s; a failure names the page the browser was on, and its text.
func steps(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	bounded, cancelSteps := context.WithTimeout(ctx, 20*time.Second)
	defer cancelSteps()
	if err := chromedp.Do(bounded, actions...); err != nil {
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		where, _ := chromedp.Run(short, chromedp.Location())
		text, _ := chromedp.Run(short, chromedp.Text("body"))
		t.Fatalf("%s: %v; the browser is on %s showing:\n%s", what, err, where, text)
	}
}

// noticeSaying selects the page's notice once it starts with text: the notice of the
// page before a form's answer loads may still be showing.
func noticeSaying(text string) string {
	return fmt.Sprintf(`//p[contains(@class, "notice") and starts-with(normalize-space(), %q)]`, text)
}

// governedSite is a site whose governance notifies through real webhooks and links its
// alerts to the site's own URL, as the leader's does with serve --public-url.
func governedSite(t *testing.T, st *store.Store) (*site, *governance.Service, *accounting.Accounting) {
	t.Helper()
	var gov *governance.Service
	var acc *accounting.Accounting
	s := newSite(t, st, false, func(cfg *web.Config, url string) {
		al := audit.New(st, time.Now)
		var err error
		acc, err = accounting.New(st, al, accounting.Config{})
		must(t, err)
		tel, err := telemetry.New(st, telemetry.Config{})
		must(t, err)
		gov, err = governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Senders: map[string]governance.Sender{governance.ChannelWebhook: governance.WebhookSender{Client: &http.Client{}}}},
			governance.Config{PortalURL: url})
		must(t, err)
		cfg.Governance, cfg.Telemetry = gov, tel
	})
	return s, gov, acc
}

// In a real browser, an admin adds a webhook channel, a budget for project detect and a
// rule that holds the project's queued jobs once a budget threshold is crossed, then
// evaluates the rules. The spend already metered passes the budget: the rule fires, the
// alert shows on /alerts with what it did, and the webhook receives it with a link. The
// link, opened signed out, goes through the sign-in of detect's team lead to that very
// alert, where she acknowledges it, reverts the hold (the job is queued again) and
// resolves it.
func TestAlertsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s, gov, acc := governedSite(t, st)
	hook := newWebhookSink(t)
	ctx := audit.WithActor(context.Background(), audit.System())
	team := &models.Team{Name: "vision"}
	must(t, st.CreateTeam(ctx, team))
	detect := &models.Project{TeamID: team.ID, Name: "detect"}
	must(t, st.CreateProject(ctx, detect))
	lena := &models.User{Username: "lena", Email: "lena@example.com"}
	must(t, st.CreateUser(ctx, lena))
	lenaPassword, err := s.id.ResetPassword(ctx, "lena")
	must(t, err)
	must(t, s.az.SetProjectRole(ctx, lena, detect, models.RoleTeamLead))
	queued := &models.Job{Name: "detect-sweep", ProjectID: detect.ID, UserID: lena.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
	must(t, st.CreateJob(ctx, queued, "test"))
	// Metering: 30 GiB of egress today at 1.00 a GiB, against the 20.00 budget added below.
	_, err = acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceEgress, RateMicros: 1_000_000, EffectiveFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
	must(t, err)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	_, err = acc.RecordUsage(ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: detect.ID, Bytes: 30 << 30, From: today, To: today.Add(time.Second)})
	must(t, err)

	b := browsertest.New(t)
	signInBrowser(t, b, s)
	steps(t, b, "add a channel and a budget",
		browsertest.Navigate(s.srv.URL+"/admin/cost/channels"),
		chromedp.WaitVisible("#f-target"),
		chromedp.SendKeys("#f-name", "chat"),
		chromedp.SetValue("#f-kind", "webhook"),
		chromedp.SendKeys("#f-target", hook.srv.URL+"/hooks/finops"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#f-target').form.querySelector('input[name=enabled]').checked = true`),
		browsertest.Loads(chromedp.Submit("#f-target")),
		chromedp.WaitVisible("[data-testid=channels]"),
		browsertest.Navigate(s.srv.URL+"/admin/cost/budgets"),
		chromedp.WaitVisible("#f-amount"),
		chromedp.SetValue("#f-owner", fmt.Sprintf("project:%d", detect.ID)),
		chromedp.SetValue("#f-amount", "20.00"),
		chromedp.SetValue("#f-thresholds", "100"),
		browsertest.Loads(chromedp.Submit("#f-amount")),
		chromedp.WaitVisible("[data-testid=budgets]"),
	)
	channels, err := gov.Channels(ctx)
	must(t, err)
	if len(channels) != 1 || !channels[0].Enabled {
		t.Fatalf("channels after the form: %+v", channels)
	}
	if budgets := run(t, b, chromedp.Text("[data-testid=budgets]")); !strings.Contains(budgets, "detect") {
		t.Fatalf("budgets table = %q, want detect's", budgets)
	}
	steps(t, b, "add a rule",
		browsertest.Navigate(s.srv.URL+"/admin/cost/rules"),
		chromedp.WaitVisible("#f-name"),
		chromedp.SendKeys("#f-name", "detect-over-budget"),
		chromedp.SetValue("#f-metric", governance.MetricBudgetThreshold),
		chromedp.SetValue("#f-threshold", "0"),
		chromedp.SetValue("#f-window", "0"),
		chromedp.SetValue("#f-action", governance.ActionHold),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const f = document.querySelector('#f-name').form;
			f.querySelector('input[name=enabled]').checked = true;
			f.querySelector('input[name=dry_run]').checked = false;
			f.querySelector('input[name=channels][value="%d"]').checked = true; })()`, channels[0].ID)),
		browsertest.Loads(chromedp.Submit("#f-name")),
		chromedp.WaitVisible(noticeSaying("Added rule")),
	)
	if notice := run(t, b, chromedp.Text(".notice")); notice != "Added rule detect-over-budget." {
		t.Fatalf("after adding the rule: %q", notice)
	}
	rules := run(t, b, chromedp.Text("[data-testid=rules]"))
	if !strings.Contains(rules, "detect-over-budget") || !strings.Contains(rules, "chat") {
		t.Fatalf("rules table = %q, want the new rule notifying chat", rules)
	}

	// Evaluation on demand, from the rules page.
	steps(t, b, "evaluate the rules",
		browsertest.Loads(chromedp.Click(`form[action="/admin/cost/evaluate"] button`)),
		chromedp.WaitVisible(noticeSaying("Evaluated the rules")),
	)
	if notice := run(t, b, chromedp.Text(".notice")); !strings.HasPrefix(notice, "Evaluated the rules:") || strings.Contains(notice, "failed") {
		t.Fatalf("after evaluating: %q", notice)
	}
	if got, _ := st.JobByID(ctx, queued.ID); got.State != models.JobHeld {
		t.Fatalf("detect's queued job is %s after the rule fired, want held", got.State)
	}
	steps(t, b, "open the alerts",
		browsertest.Navigate(s.srv.URL+"/alerts"),
		chromedp.WaitVisible("[data-testid=alerts]"),
	)
	row := run(t, b, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid=alerts] tbody tr')].map(r => r.innerText).find(t => t.includes('detect-over-budget')) || ''`))
	for _, want := range []string{"project detect", "firing", "hold"} {
		if !strings.Contains(row, want) {
			t.Errorf("the alert's row on /alerts = %q, lacks %q", row, want)
		}
	}

	// The leader's delivery round: the webhook gets the alert, linked to its page.
	rep, err := gov.Deliver(ctx, time.Now())
	must(t, err)
	alert, text, ok := hook.alertOf("detect-over-budget")
	if !ok || len(rep.Failed) != 0 {
		t.Fatalf("the webhook got no alert of the rule (delivery %+v)", rep)
	}
	id := int64(alert["id"].(float64))
	link, _ := alert["url"].(string)
	if want := fmt.Sprintf("%s/alerts/%d", s.srv.URL, id); link != want || !strings.HasSuffix(text, "\n"+want) {
		t.Fatalf("webhook link = %q, text %q; want %s", link, text, want)
	}

	// The admin signs out; lena follows the link: sign-in first, then the alert itself.
	steps(t, b, "follow the link",
		browsertest.Loads(chromedp.Click(".user-menu button")),
		chromedp.WaitVisible("#username"),
		browsertest.Navigate(link),
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "lena"),
		chromedp.SendKeys("#password", lenaPassword),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible("[data-testid=alert-state]"),
	)
	location := run(t, b, chromedp.Location())
	heading := run(t, b, chromedp.Text("h1"))
	action := run(t, b, chromedp.Text("[data-testid=action]"))
	if location != link || heading != fmt.Sprintf("Alert #%d: detect-over-budget", id) {
		t.Fatalf("the link led lena to %s showing %q", location, heading)
	}
	if !strings.Contains(action, "Action: hold changed 1 job(s)") || !strings.Contains(action, fmt.Sprintf("detect-sweep (#%d)", queued.ID)) {
		t.Errorf("action panel = %q, want the hold of detect-sweep", action)
	}
	if user := run(t, b, chromedp.Text(".user-menu")); !strings.Contains(user, "lena") {
		t.Errorf("user menu = %q, want lena signed in", user)
	}

	for _, step := range []struct{ button, notice, state string }{
		{"Acknowledge: I am on it", "Acknowledged", governance.StateAcknowledged},
		{"Revert this action", "Reverted", governance.StateAcknowledged},
		{"Resolve", "Resolved", governance.StateResolved},
	} {
		steps(t, b, step.button,
			browsertest.Loads(chromedp.Click(fmt.Sprintf(`//button[normalize-space()=%q]`, step.button))),
			chromedp.WaitVisible(noticeSaying(step.notice)),
		)
		notice := run(t, b, chromedp.Text(".notice"))
		state := run(t, b, chromedp.Text("[data-testid=alert-state]"))
		if !strings.Contains(notice, step.notice) || state != step.state {
			t.Errorf("after %q: notice %q, state %q; want %q, %s", step.button, notice, state, step.notice, step.state)
		}
	}
	if got, _ := st.JobByID(ctx, queued.ID); got.State != models.JobQueued {
		t.Errorf("detect's job is %s after the revert, want queued", got.State)
	}
	if action := run(t, b, chromedp.Text("[data-testid=action]")); !strings.Contains(action, "Reverted") || !strings.Contains(action, "lena") {
		t.Errorf("action panel after the revert = %q, want who reverted it", action)
	}
	browsertest.Screenshot(t, b, "alert")
	a, _, err := gov.AlertByID(ctx, id)
	must(t, err)
	if a.State != governance.StateResolved || a.AckedByID == nil || *a.AckedByID != lena.ID {
		t.Errorf("the alert after lena handled it = %+v", a)
	}
	if got := strings.Join(s.audited("alert."), " "); !strings.Contains(got, "alert.acknowledged:lena alert.resolved:lena") {
		t.Errorf("audited %q", got)
	}
}
