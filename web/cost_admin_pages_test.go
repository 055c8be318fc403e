package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// post sends a form as c with the CSRF token of page and returns the status, the
// redirect's notice (unescaped) and the body.
func (s *site) post(c *http.Client, page, path string, form url.Values) (int, string, string) {
	s.t.Helper()
	form.Set("csrf_token", s.csrf(c, page))
	res, body := s.send(c, "POST", path, form.Encode(), nil)
	notice := ""
	if loc, err := url.Parse(res.Header.Get("Location")); err == nil {
		notice = loc.Query().Get("notice")
	}
	return res.StatusCode, notice, body
}

// audited lists the audit events whose action starts with prefix, as action:actor.
func (s *site) audited(prefix string) []string {
	s.t.Helper()
	events, err := s.st.AuditEventsAfter(context.Background(), store.AuditFilter{}, 0, 10_000)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e.Action, prefix) {
			out = append(out, e.Action+":"+e.Actor)
		}
	}
	return out
}

var invalidField = regexp.MustCompile(`id="f-([a-z_]+)"[^>]*aria-invalid`)

// costAdminSite is a site with its admin, a member ada and an auditor audrey, signed in.
func costAdminSite(t *testing.T, st *store.Store) (s *site, admin, ada, auditor *http.Client) {
	t.Helper()
	s = newSite(t, st, false)
	admin = s.signIn("admin", s.password)
	ada, _ = s.member("ada")
	auditor, auditorUser := s.member("audrey")
	if err := s.az.SetGlobalRoles(context.Background(), auditorUser, false, true); err != nil {
		t.Fatal(err)
	}
	return s, admin, ada, auditor
}

// Rates through the admin page: bad input names its field and stores nothing; a rate
// inside metered time, or the same key at the same instant, is refused; a rate that
// priced metered time cannot be withdrawn, a scheduled one can; auditors read, users
// are refused; every change is audited.
func TestCostRatesPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, admin, ada, auditor := costAdminSite(t, st)
		page := "/admin/cost/rates"
		if res, body := s.send(admin, "GET", page, "", nil); res.StatusCode != 200 || !strings.Contains(body, "No rates yet") {
			t.Fatalf("empty rate card = %d", res.StatusCode)
		}
		gpu := func(rate, from string) url.Values {
			return url.Values{"resource": {"gpu"}, "gpu_model": {"A100-80GB"}, "rate": {rate}, "effective_from": {from}}
		}
		for _, c := range []struct {
			form        url.Values
			field, says string
		}{
			{gpu("-1", "2026-01-01T00:00"), "rate", "Rate: -1000000 is negative"},
			{gpu("5000", "2026-01-01T00:00"), "rate", "Rate: 5000000000 (5000.00 per gpu-hour) is absurd; at most 1000000000 (1000.00 per gpu-hour)"},
			{gpu("two", "2026-01-01T00:00"), "rate", "Rate: &#34;two&#34; is not an amount"},
			{gpu("2.50", "soon"), "effective_from", "Effective from: &#34;soon&#34; is not a date and time"},
			{url.Values{"resource": {"tpu"}, "rate": {"1"}, "effective_from": {"2026-01-01T00:00"}}, "resource", "Resource: &#34;tpu&#34; is not one of gpu, cpu"},
			{url.Values{"resource": {"cpu"}, "gpu_model": {"A100-80GB"}, "rate": {"1"}, "effective_from": {"2026-01-01T00:00"}}, "gpu_model", "only gpu rates name a GPU model"},
			{url.Values{"resource": {"license"}, "unit": {"job-hour"}, "rate": {"1"}, "effective_from": {"2026-01-01T00:00"}}, "image_id", "a licence rate names the image"},
			{url.Values{"resource": {"gpu"}, "pool_id": {"x"}, "rate": {"1"}, "effective_from": {"2026-01-01T00:00"}}, "pool_id", "Pool ID: &#34;x&#34; is not one of the choices"},
		} {
			status, _, body := s.post(admin, page, page, c.form)
			m := invalidField.FindStringSubmatch(body)
			if status != http.StatusBadRequest || !strings.Contains(body, c.says) || m == nil || m[1] != c.field {
				t.Errorf("%v: %d, invalid field %v, want 400 saying %q on %s", c.form, status, m, c.says, c.field)
			}
		}
		status, notice, _ := s.post(admin, page, page, gpu("2.5", "2026-01-01T00:00"))
		if status != http.StatusSeeOther || notice != "Added a gpu rate of 2.500000 USD per gpu-hour, in effect from 2026-01-01 00:00 UTC." {
			t.Fatalf("add = %d %q", status, notice)
		}
		if status, _, body := s.post(admin, page, page, gpu("3", "2026-01-01T00:00")); status != http.StatusBadRequest ||
			!strings.Contains(body, "Effective from: overlaps another gpu rate of the same model") {
			t.Errorf("same key, same instant = %d", status)
		}
		// Metering closes time up to this hour: no rate may start inside it any more.
		acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := acc.Meter(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
		if status, _, body := s.post(admin, page, page, gpu("3", "2026-01-02T00:00")); status != http.StatusBadRequest ||
			!strings.Contains(body, "a rate change never rewrites the past") {
			t.Errorf("rate inside metered time = %d", status)
		}
		next := time.Now().UTC().Add(48 * time.Hour).Format("2006-01-02T15:04")
		if status, _, _ := s.post(admin, page, page, gpu("3.125", next)); status != http.StatusSeeOther {
			t.Fatalf("scheduled rate = %d", status)
		}
		rates, err := acc.Rates(context.Background())
		if err != nil || len(rates) != 2 || rates[0].RateMicros != 2_500_000 || rates[1].RateMicros != 3_125_000 {
			t.Fatalf("rates = %+v, %v", rates, err)
		}
		_, body := s.send(admin, "GET", page, "", nil)
		for _, want := range []string{"2.500000 USD per gpu-hour", "badge-rate-in-effect", "3.125000 USD per gpu-hour", "badge-rate-scheduled"} {
			if !strings.Contains(body, want) {
				t.Errorf("rate card lacks %q", want)
			}
		}
		if n := strings.Count(body, ">Withdraw<"); n != 1 {
			t.Errorf("%d withdraw buttons, want one (the scheduled rate)", n)
		}
		if status, _, body := s.post(admin, page, fmt.Sprintf("/admin/cost/rates/%d/delete", rates[0].ID), url.Values{}); status != http.StatusConflict ||
			!strings.Contains(body, "has priced metered time, so it stays") {
			t.Errorf("withdraw a used rate = %d", status)
		}
		if status, notice, _ := s.post(admin, page, fmt.Sprintf("/admin/cost/rates/%d/delete", rates[1].ID), url.Values{}); status != http.StatusSeeOther || notice != "Withdrew the rate." {
			t.Errorf("withdraw a scheduled rate = %d %q", status, notice)
		}
		if res, _ := s.send(admin, "POST", "/admin/cost/rates/999/delete", "csrf_token="+s.csrf(admin, page), nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("withdraw a missing rate = %d", res.StatusCode)
		}
		if res, body := s.send(auditor, "GET", page, "", nil); res.StatusCode != 200 || !strings.Contains(body, "2.500000 USD per gpu-hour") || strings.Contains(body, "Add a rate") {
			t.Errorf("auditor's rate card = %d; want the rates without the form", res.StatusCode)
		}
		if res, _ := s.send(ada, "GET", page, "", nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("a member's rate card = %d, want 403", res.StatusCode)
		}
		if got := strings.Join(s.audited("cost_rate."), " "); got != "cost_rate.created:admin cost_rate.created:admin cost_rate.deleted:admin" {
			t.Errorf("audited %q", got)
		}
	})
}

// The currency through the rates page: USD until an admin names another; a bad code
// names the field and changes nothing; the change is audited and every page that
// shows money says the new code; auditors see it without the form, members are refused.
func TestCostCurrencyPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, admin, ada, auditor := costAdminSite(t, st)
		page := "/admin/cost/rates"
		if _, body := s.send(admin, "GET", page, "", nil); !strings.Contains(body, `<strong data-testid="currency">USD</strong>`) ||
			!strings.Contains(body, `name="currency" value="USD"`) {
			t.Fatalf("rates page before any currency is named: %s", body)
		}
		for _, bad := range []string{"EURO", "XYZ", ""} {
			status, _, body := s.post(admin, page, "/admin/cost/currency", url.Values{"currency": {bad}})
			if m := invalidField.FindStringSubmatch(body); status != http.StatusBadRequest || m == nil || m[1] != "currency" ||
				!strings.Contains(body, "is not an ISO 4217 currency code") {
				t.Errorf("currency %q = %d, invalid field %v; want 400 on currency", bad, status, m)
			}
		}
		if got := s.audited("cost.currency"); len(got) != 0 {
			t.Errorf("refused codes audited %v", got)
		}
		status, notice, _ := s.post(admin, page, "/admin/cost/currency", url.Values{"currency": {"eur"}})
		if status != http.StatusSeeOther || notice != "Amounts are now in EUR." {
			t.Fatalf("name EUR = %d %q", status, notice)
		}
		if status, _, _ := s.post(admin, page, page, url.Values{"resource": {"gpu"}, "rate": {"2.5"}, "effective_from": {"2026-01-01T00:00"}}); status != http.StatusSeeOther {
			t.Fatalf("add a rate = %d", status)
		}
		if _, body := s.send(auditor, "GET", page, "", nil); !strings.Contains(body, `<strong data-testid="currency">EUR</strong>`) ||
			!strings.Contains(body, "2.500000 EUR per gpu-hour") || strings.Contains(body, `action="/admin/cost/currency"`) {
			t.Errorf("auditor's rates page after EUR: %s", body)
		}
		if status, _, _ := s.post(auditor, page, "/admin/cost/currency", url.Values{"currency": {"GBP"}}); status != http.StatusForbidden {
			t.Errorf("an auditor naming a currency = %d, want 403", status)
		}
		if status, _, _ := s.post(ada, "/", "/admin/cost/currency", url.Values{"currency": {"GBP"}}); status != http.StatusForbidden {
			t.Errorf("a member naming a currency = %d, want 403", status)
		}
		if _, body := s.send(admin, "GET", "/admin/cost/budgets", "", nil); !strings.Contains(body, "Amount a month (EUR)") {
			t.Errorf("budgets page does not say EUR")
		}
		if got := strings.Join(s.audited("cost.currency"), " "); got != "cost.currency_set:admin" {
			t.Errorf("audited %q", got)
		}
	})
}

// Budgets through the admin page show this month's spend to the cent; bad amounts and
// thresholds name their field; change and delete are audited.
func TestCostBudgetsPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		ctx := context.Background()
		admin := s.signIn("admin", s.password)
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		project := &models.Project{TeamID: team.ID, Name: "detect"}
		must(t, st.CreateProject(ctx, project))
		acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
		must(t, err)
		_, err = acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceEgress, RateMicros: 1_000_000, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		must(t, err)
		now := time.Now().UTC()
		start := now.Truncate(time.Hour).Add(-time.Hour)
		if start.Month() != now.Month() {
			start = now.Truncate(time.Hour)
		}
		_, err = acc.RecordUsage(ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: project.ID, Bytes: 3 << 30, From: start, To: start.Add(time.Minute)})
		must(t, err)

		page := "/admin/cost/budgets"
		owner := fmt.Sprintf("team:%d", team.ID)
		for _, c := range []struct {
			form        url.Values
			field, says string
		}{
			{url.Values{"owner": {owner}, "amount": {"-5"}}, "amount", "Amount: -5000000 is not a budget"},
			{url.Values{"owner": {owner}, "amount": {"lots"}}, "amount", "Amount: &#34;lots&#34; is not an amount"},
			{url.Values{"owner": {owner}, "amount": {"2000000000"}}, "amount", "Amount: 2000000000.00 a month is absurd"},
			{url.Values{"owner": {owner}, "amount": {"100"}, "thresholds": {"50, most"}}, "thresholds", "Thresholds: &#34;most&#34; is not a whole percentage"},
			{url.Values{"owner": {owner}, "amount": {"100"}, "thresholds": {"50, 50"}}, "thresholds", "Thresholds: 50% is given twice"},
			{url.Values{"owner": {"team:999"}, "amount": {"100"}}, "owner", "Owner: there is no team 999"},
			{url.Values{"owner": {"nobody"}, "amount": {"100"}}, "owner", "Owner: choose the team or project"},
		} {
			status, _, body := s.post(admin, page, page, c.form)
			m := invalidField.FindStringSubmatch(body)
			if status != http.StatusBadRequest || !strings.Contains(body, c.says) || m == nil || m[1] != c.field {
				t.Errorf("%v: %d, invalid field %v, want 400 saying %q on %s", c.form, status, m, c.says, c.field)
			}
		}
		if status, notice, _ := s.post(admin, page, page, url.Values{"owner": {owner}, "amount": {"100"}, "thresholds": {"50, 80%"}}); status != http.StatusSeeOther ||
			notice != "Added a budget of 100.00 USD a month." {
			t.Fatalf("add = %d %q", status, notice)
		}
		if status, _, body := s.post(admin, page, page, url.Values{"owner": {owner}, "amount": {"10"}}); status != http.StatusBadRequest || !strings.Contains(body, "Owner: has a budget already") {
			t.Errorf("second budget of a team = %d", status)
		}
		budgets, err := acc.Budgets(ctx)
		must(t, err)
		if len(budgets) != 1 || budgets[0].AmountMicros != 100_000_000 || budgets[0].Thresholds != "[50,80]" {
			t.Fatalf("budgets = %+v", budgets)
		}
		id := budgets[0].ID
		_, body := s.send(admin, "GET", page, "", nil)
		for _, want := range []string{"<td>team vision</td>", "<td class=\"num\">100.00</td>", "<td>50, 80</td>", "3.00 (3.0%)"} {
			if !strings.Contains(body, want) {
				t.Errorf("budgets page lacks %q", want)
			}
		}
		if status, _, body := s.post(admin, page, fmt.Sprintf("%s/%d", page, id), url.Values{"amount": {"0"}, "thresholds": {"50"}}); status != http.StatusBadRequest ||
			!strings.Contains(body, "Budget not changed. Amount: 0 is not a budget") {
			t.Errorf("zero budget = %d", status)
		}
		if status, notice, _ := s.post(admin, page, fmt.Sprintf("%s/%d", page, id), url.Values{"amount": {"150.5"}, "thresholds": {"100"}}); status != http.StatusSeeOther ||
			notice != "Saved the budget: 150.50 USD a month." {
			t.Errorf("update = %d %q", status, notice)
		}
		if b, err := st.BudgetByID(ctx, id); err != nil || b.AmountMicros != 150_500_000 || b.Thresholds != "[100]" {
			t.Errorf("updated budget = %+v, %v", b, err)
		}
		if status, _, _ := s.post(admin, page, fmt.Sprintf("%s/%d/delete", page, id), url.Values{}); status != http.StatusSeeOther {
			t.Errorf("delete = %d", status)
		}
		if status, _, _ := s.post(admin, page, fmt.Sprintf("%s/%d/delete", page, id), url.Values{}); status != http.StatusNotFound {
			t.Errorf("delete twice = %d", status)
		}
		if got := strings.Join(s.audited("budget."), " "); got != "budget.created:admin budget.updated:admin budget.deleted:admin" {
			t.Errorf("audited %q", got)
		}
	})
}

// Rules through the admin page: an unknown metric or an impossible window is refused
// naming the field; a rule is added, edited and evaluated on demand, audited.
func TestCostRulesPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		page := "/admin/cost/rules"
		_, body := s.send(admin, "GET", page, "", nil)
		for _, want := range []string{"team-cost-spike", "budget-forecast", "<code>job_idle_minutes</code>"} {
			if !strings.Contains(body, want) {
				t.Errorf("rules page lacks %q", want)
			}
		}
		rule := func(metric, threshold, window, action string) url.Values {
			return url.Values{"name": {"vision-idle"}, "metric": {metric}, "threshold": {threshold}, "window": {window}, "action": {action}, "enabled": {"on"}}
		}
		for _, c := range []struct {
			form        url.Values
			field, says string
		}{
			{rule("gpu_temperature", "90", "1h", "notify"), "metric", "Metric: &#34;gpu_temperature&#34; is not a metric rules can watch"},
			{rule("team_cost_ratio", "200", "1h", "notify"), "window", "Window: 3600 s is impossible for team_cost_ratio"},
			{rule("team_cost_ratio", "200", "fortnight", "notify"), "window", "Window: &#34;fortnight&#34; is not a window"},
			{rule("project_gpu_idle_rate", "140", "7d", "notify"), "threshold", "Threshold: 140 is outside"},
			{rule("project_gpu_idle_rate", "many", "7d", "notify"), "threshold", "Threshold: &#34;many&#34; is not a number"},
			{rule("project_gpu_idle_rate", "40", "7d", "stop"), "action", "Action: &#34;stop&#34; is not an action of project_gpu_idle_rate rules"},
		} {
			status, _, body := s.post(admin, page, page, c.form)
			m := invalidField.FindStringSubmatch(body)
			if status != http.StatusBadRequest || !strings.Contains(body, c.says) || m == nil || m[1] != c.field {
				t.Errorf("%v: %d, invalid field %v, want 400 saying %q on %s", c.form, status, m, c.says, c.field)
			}
		}
		status, _, body := s.post(admin, page, page, url.Values{"name": {"x"}, "metric": {"job_idle_minutes"}, "threshold": {"30"}, "action": {"notify"}, "channels": {"77"}})
		if status != http.StatusBadRequest || !strings.Contains(body, "Channels: there is no channel 77") {
			t.Errorf("unknown channel = %d", status)
		}
		form := rule("project_gpu_idle_rate", "40", "7d", "hold")
		form.Set("dry_run", "on")
		if status, notice, _ := s.post(admin, page, page, form); status != http.StatusSeeOther || notice != "Added rule vision-idle." {
			t.Fatalf("add = %d %q", status, notice)
		}
		rules, err := st.AlertRules(context.Background())
		must(t, err)
		var added *models.AlertRule
		for i := range rules {
			if rules[i].Name == "vision-idle" {
				added = &rules[i]
			}
		}
		if added == nil || added.WindowSec != 7*86400 || added.Threshold != 40 || !added.DryRun || !added.Enabled || added.Action != "hold" {
			t.Fatalf("added rule = %+v", added)
		}
		edit := fmt.Sprintf("%s/%d", page, added.ID)
		_, body = s.send(admin, "GET", edit, "", nil)
		if !strings.Contains(body, `value="7d"`) || !strings.Contains(body, "Edit rule vision-idle") || !strings.Contains(body, `name="dry_run" value="on" checked`) {
			t.Errorf("edit form does not show the rule")
		}
		form.Set("window", "36h")
		form.Del("dry_run")
		if status, notice, _ := s.post(admin, edit, edit, form); status != http.StatusSeeOther || notice != "Saved rule vision-idle." {
			t.Errorf("update = %d %q", status, notice)
		}
		if r, err := st.AlertRuleByID(context.Background(), added.ID); err != nil || r.WindowSec != 36*3600 || r.DryRun {
			t.Errorf("updated rule = %+v, %v", r, err)
		}
		if res, _ := s.send(admin, "GET", page+"/999", "", nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("missing rule = %d", res.StatusCode)
		}
		if status, notice, _ := s.post(admin, page, "/admin/cost/evaluate", url.Values{}); status != http.StatusSeeOther || notice != "Evaluated the rules: 0 new alert(s)." {
			t.Errorf("evaluate = %d %q", status, notice)
		}
		if got := strings.Join(s.audited("alert_rule."), " "); got != "alert_rule.created:admin alert_rule.updated:admin" {
			t.Errorf("audited %q", got)
		}
	})
}

// Channels through the admin page: webhook URLs show only their host; a toggle keeps
// the target; bad targets name the field.
func TestCostChannelsPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		page := "/admin/cost/channels"
		if _, body := s.send(admin, "GET", page, "", nil); !strings.Contains(body, "No channels yet") || !strings.Contains(body, "no mail server configured") {
			t.Errorf("empty channels page")
		}
		for _, c := range []struct {
			form        url.Values
			field, says string
		}{
			{url.Values{"name": {"chat"}, "kind": {"webhook"}, "target": {"ftp://files.example/x"}}, "target", "Target: a webhook needs an http:// or https:// URL"},
			{url.Values{"name": {"chat"}, "kind": {"email"}, "target": {"not-an-address"}}, "target", "Target: &#34;not-an-address&#34; is not an e-mail address"},
			{url.Values{"name": {"chat"}, "kind": {"pager"}, "target": {"x"}}, "kind", "Kind: &#34;pager&#34; is not a channel kind"},
			{url.Values{"name": {""}, "kind": {"webhook"}, "target": {"https://hooks.example/x"}}, "name", "Name: give a name"},
		} {
			status, _, body := s.post(admin, page, page, c.form)
			m := invalidField.FindStringSubmatch(body)
			if status != http.StatusBadRequest || !strings.Contains(body, c.says) || m == nil || m[1] != c.field {
				t.Errorf("%v: %d, invalid field %v, want 400 saying %q on %s", c.form, status, m, c.says, c.field)
			}
		}
		secret := "https://hooks.example/services/T000/B000/s3cr3t"
		if status, notice, _ := s.post(admin, page, page, url.Values{"name": {"chat"}, "kind": {"webhook"}, "target": {secret}, "enabled": {"on"}}); status != http.StatusSeeOther ||
			notice != "Added channel chat (enabled)." {
			t.Fatalf("add = %d %q", status, notice)
		}
		_, body := s.send(admin, "GET", page, "", nil)
		if strings.Contains(body, "s3cr3t") || !strings.Contains(body, "https://hooks.example/…") {
			t.Errorf("the channels page shows the webhook's secret path, or not its host")
		}
		chs, err := st.NotificationChannels(context.Background())
		must(t, err)
		toggle := fmt.Sprintf("%s/%d", page, chs[0].ID)
		if status, notice, _ := s.post(admin, page, toggle, url.Values{"name": {"chat"}, "kind": {"webhook"}}); status != http.StatusSeeOther || notice != "Saved channel chat (disabled)." {
			t.Errorf("disable = %d %q", status, notice)
		}
		chs, err = st.NotificationChannels(context.Background())
		if err != nil || chs[0].Enabled || chs[0].Target != secret {
			t.Errorf("disabled channel = %+v, %v; want disabled with its target kept", chs[0], err)
		}
		if status, _, _ := s.post(admin, page, page+"/999", url.Values{"name": {"x"}, "kind": {"webhook"}}); status != http.StatusNotFound {
			t.Errorf("missing channel = %d", status)
		}
		if got := strings.Join(s.audited("channel."), " "); got != "channel.created:admin channel.updated:admin" {
			t.Errorf("audited %q", got)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
