package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/governance/mailtest"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/web"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// signInBrowserAs signs the browser in through the login form.
func signInBrowserAs(t *testing.T, ctx context.Context, s *site, username, password string) {
	t.Helper()
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/login"),
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", username),
		chromedp.SendKeys("#password", password),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible(".user-menu"),
	)
	if err != nil {
		t.Fatalf("sign in as %s: %v", username, err)
	}
}

// signOutBrowser signs the browser out from the user menu.
func signOutBrowser(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click(chromedp.CSS(`.user-menu form[action="/logout"] button`))), chromedp.WaitVisible("#username")); err != nil {
		t.Fatalf("sign out: %v", err)
	}
}

// In a real browser, an admin creates a reusable join token: it is shown once with the
// agent's command line, listed as active, kept only as a hash, and gone from the page on
// the next visit; a bad expiry is named and creates nothing; revoking asks first.
func TestJoinTokenInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin/nodes"),
		browsertest.Loads(chromedp.Click(`a[href="/admin/join-tokens"]`)),
		chromedp.WaitVisible("#jt-name"),
		chromedp.SendKeys("#jt-name", "rack-3"),
		chromedp.SendKeys("#jt-expires", "soon"),
		browsertest.Loads(chromedp.Click("#jt-create")),
		chromedp.WaitVisible(".form-error"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := run(t, ctx, chromedp.Text(".form-error")); !strings.Contains(msg, "Expires") {
		t.Fatalf("a bad expiry says %q, want the field named", msg)
	}
	if toks, _ := st.JoinTokens(t.Context()); len(toks) != 0 {
		t.Fatalf("a bad expiry created %d tokens", len(toks))
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue("#jt-expires", "24h"),
		chromedp.Click("#jt-reusable"),
		browsertest.Loads(chromedp.Click("#jt-create")),
		chromedp.WaitVisible("[data-testid=join-secret]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	secret := run(t, ctx, chromedp.Text("[data-testid=join-secret]"))
	command := run(t, ctx, chromedp.Text("[data-testid=join-command]"))
	row := run(t, ctx, chromedp.Text(`[data-token="rack-3"]`))
	status := run(t, ctx, chromedp.Text(`[data-token="rack-3"] [data-testid=status]`))
	if len(secret) < 20 || !strings.Contains(command, "gantry agent") || !strings.Contains(command, secret) || status != "active" || !strings.Contains(row, "reusable") {
		t.Fatalf("after creating: secret %q, command %q, row %q, status %q", secret, command, row, status)
	}
	toks, err := st.JoinTokens(t.Context())
	if err != nil || len(toks) != 1 || !toks[0].Reusable || toks[0].Hash == "" || strings.Contains(toks[0].Hash, secret) ||
		toks[0].ExpiresAt.Before(time.Now().Add(23*time.Hour)) || toks[0].ExpiresAt.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("stored %+v, %v; want one reusable token, hashed, expiring in 24h", toks, err)
	}
	if changes := run(t, ctx, chromedp.Text("[data-testid=changes]")); !strings.Contains(changes, "join_token.created") {
		t.Errorf("the page's changes do not show the creation: %q", changes)
	}
	browsertest.Screenshot(t, ctx, "admin-join-token")

	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/admin/join-tokens"), chromedp.WaitVisible(`[data-token="rack-3"]`)); err != nil {
		t.Fatal(err)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=join-secret]').length`)); n != 0 {
		t.Fatal("the secret shows again on the next visit")
	}
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(`[data-token="rack-3"] button`)),
		chromedp.WaitVisible("#confirm-button"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if q := run(t, ctx, chromedp.Text("h1")); q != "Revoke join token rack-3?" {
		t.Fatalf("revoking asks %q", q)
	}
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#confirm-button")), chromedp.WaitVisible(".notice")); err != nil {
		t.Fatal(err)
	}
	if status := run(t, ctx, chromedp.Text(`[data-token="rack-3"] [data-testid=status]`)); status != "revoked" {
		t.Fatalf("after revoking the token is %q", status)
	}
}

// In a real browser, an admin adds an image by reference, certifies it and later
// deprecates it; the catalog shows each status, and a malformed reference is named and
// adds nothing.
func TestImageCertifyAndDeprecateInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	add := func(reference string) {
		t.Helper()
		err := chromedp.Do(ctx,
			browsertest.Navigate(s.srv.URL+"/images"),
			chromedp.WaitVisible("#f-name"),
			chromedp.SendKeys("#f-name", "jax-0.4-cuda12.4"),
			chromedp.SendKeys("#f-reference", reference),
			chromedp.SetValue("#f-framework", "jax"),
			chromedp.SendKeys("#f-framework_version", "0.4.30"),
			chromedp.SendKeys("#f-cuda_version", "12.4"),
			chromedp.SendKeys("#f-python_version", "3.11"),
			browsertest.Loads(chromedp.Submit("#f-name")),
		)
		if err != nil {
			t.Fatal(err)
		}
	}
	add("ghcr.io/acme/JAX:: bad")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#image-error")); err != nil {
		t.Fatal(err)
	}
	if msg := run(t, ctx, chromedp.Text("#image-error")); !strings.Contains(strings.ToLower(msg), "reference") {
		t.Fatalf("a malformed reference says %q, want the field named", msg)
	}
	if img, err := st.ImageByName(t.Context(), "jax-0.4-cuda12.4"); err == nil {
		t.Fatalf("a malformed reference added %+v", img)
	}

	add("ghcr.io/acme/jax:0.4.30-cuda12.4")
	row := `[data-image="jax-0.4-cuda12.4"]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(row)); err != nil {
		t.Fatal(err)
	}
	if status := run(t, ctx, chromedp.Text(row+" [data-testid=status]")); status != models.ImageUncertified {
		t.Fatalf("a new image is %q, want %s", status, models.ImageUncertified)
	}
	for _, step := range []struct{ verb, status string }{{"Certify", models.ImageCertified}, {"Deprecate", models.ImageDeprecated}} {
		err := chromedp.Do(ctx,
			browsertest.Navigate(s.srv.URL+"/images"), // a page without a notice yet
			chromedp.WaitVisible(row),
			browsertest.Loads(chromedp.Click(fmt.Sprintf(`//tr[@data-image="jax-0.4-cuda12.4"]//button[normalize-space()=%q]`, step.verb))),
			chromedp.WaitVisible(".notice"),
		)
		if err != nil {
			t.Fatalf("%s: %v", step.verb, err)
		}
		notice := run(t, ctx, chromedp.Text(".notice"))
		status := run(t, ctx, chromedp.Text(row+" [data-testid=status]"))
		if notice != "jax-0.4-cuda12.4 is now "+step.status+"." || status != step.status {
			t.Fatalf("after %s: notice %q, status %q", step.verb, notice, status)
		}
		if step.status == models.ImageCertified {
			browsertest.Screenshot(t, ctx, "images-certified")
		}
	}
	img, err := st.ImageByName(t.Context(), "jax-0.4-cuda12.4")
	if err != nil || img.Status != models.ImageDeprecated || img.Reference != "ghcr.io/acme/jax:0.4.30-cuda12.4" || img.CUDAVersion != "12.4" {
		t.Fatalf("stored %+v, %v", img, err)
	}
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/images?status=certified"), chromedp.WaitVisible("#q")); err != nil {
		t.Fatal(err)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-image="jax-0.4-cuda12.4"]').length`)); n != 0 {
		t.Error("the deprecated image is listed among the certified ones")
	}
}

// mailSite is a site whose feedback e-mails through governance to a real SMTP server on
// loopback, as serve does with --smtp-host.
func mailSite(t *testing.T, st *store.Store) (*site, *governance.Service, *mailtest.Server) {
	t.Helper()
	mail := mailtest.New(t)
	al := audit.New(st, time.Now)
	acc, err := accounting.New(st, al, accounting.Config{})
	must(t, err)
	tel, err := telemetry.New(st, telemetry.Config{})
	must(t, err)
	gov, err := governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel,
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Mailer: governance.SMTPSender{Addr: mail.Addr, From: "Gantry <gantry@example.com>"}}, governance.Config{PortalURL: "https://gantry.example"})
	must(t, err)
	s := newSite(t, st, false, func(cfg *web.Config, _ string) { cfg.Telemetry, cfg.Governance = tel, gov })
	return s, gov, mail
}

// In a real browser, a user files feedback with the button of the page they are on; an
// admin answers it and sets its status; the author then sees the answer among their
// notifications on the home page, follows it to the item, and gets the e-mail.
func TestFeedbackAnswerNotifiesTheAuthorInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s, gov, mail := mailSite(t, st)
	ada := &models.User{Username: "ada", DisplayName: "Ada Lovelace", Email: "ada@example.com"}
	must(t, st.CreateUser(t.Context(), ada))
	adaPassword, err := s.id.ResetPassword(t.Context(), "ada")
	must(t, err)
	ctx := browsertest.New(t)

	signInBrowserAs(t, ctx, s, "ada", adaPassword)
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/images"),
		chromedp.Click(`[data-testid=feedback-button] summary`),
		chromedp.WaitVisible("#fbb-title"),
		chromedp.SetValue("#fbb-category", "image-request"),
		chromedp.SendKeys("#fbb-title", "A JAX image with CUDA 12.4"),
		browsertest.Loads(chromedp.Click("#fbb-send")),
		chromedp.WaitVisible("[data-testid=page]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	itemURL := run(t, ctx, chromedp.Evaluate[string](`location.pathname`))
	signOutBrowser(t, ctx)

	signInBrowser(t, ctx, s)
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/feedback"),
		chromedp.WaitVisible("[data-testid=board]"),
		browsertest.Loads(chromedp.Click(`//ul[@data-testid="board"]//a[normalize-space()="A JAX image with CUDA 12.4"]`)),
		chromedp.WaitVisible("#answer-text"),
		chromedp.SetValue("#answer-status", models.FeedbackPlanned),
		chromedp.SendKeys("#answer-text", "We build it this week; watch the catalog."),
		browsertest.Loads(chromedp.Submit("#answer-text")),
		chromedp.WaitVisible("[data-testid=answer]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if status := run(t, ctx, chromedp.Text("[data-testid=status]")); status != models.FeedbackPlanned {
		t.Fatalf("after answering the item is %q", status)
	}
	signOutBrowser(t, ctx)

	signInBrowserAs(t, ctx, s, "ada", adaPassword)
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/"), chromedp.WaitVisible("[data-testid=alerts]")); err != nil {
		t.Fatal(err)
	}
	mine := run(t, ctx, chromedp.Text("[data-testid=alerts]"))
	if !strings.Contains(mine, `Your feedback "A JAX image with CUDA 12.4" is now planned`) || !strings.Contains(mine, "We build it this week; watch the catalog.") {
		t.Fatalf("ada's notifications say %q", mine)
	}
	browsertest.Screenshot(t, ctx, "feedback-notified")
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(`[data-testid=alerts] a[href="`+itemURL+`"]`)),
		chromedp.WaitVisible("[data-testid=answer]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if answer := run(t, ctx, chromedp.Text("[data-testid=answer]")); !strings.Contains(answer, "We build it this week") {
		t.Fatalf("the item ada opened says %q", answer)
	}

	// The leader's delivery round sends the e-mail the answer queued.
	rep, err := gov.Deliver(t.Context(), time.Now())
	if err != nil || rep.Sent != 1 {
		t.Fatalf("delivery = %+v, %v; want the answer's e-mail sent", rep, err)
	}
	mails := mail.Received()
	if len(mails) != 1 || mails[0].To[0] != "ada@example.com" || !strings.Contains(mails[0].Data, "Subject: [Gantry] Your feedback \"A JAX image with CUDA 12.4\" is now planned\r\n") ||
		!strings.Contains(mails[0].Data, "https://gantry.example"+itemURL+"\r\n") {
		t.Fatalf("mail server got %+v", mails)
	}
}

// In a real browser, an admin creates a priority class, sees it listed with what was
// set, and a weight that is no number is named and changes nothing.
func TestPriorityClassInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin"),
		browsertest.Loads(chromedp.Click(`a[href="/admin/priority-classes"]`)),
		chromedp.WaitVisible("#class-name"),
		chromedp.SendKeys("#class-name", "urgent"),
		chromedp.SendKeys("#class-weight", "lots"),
		browsertest.Loads(chromedp.Click("#class-save")),
		chromedp.WaitVisible(".form-error"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := run(t, ctx, chromedp.Text(".form-error")); !strings.Contains(msg, "Weight") {
		t.Fatalf("a bad weight says %q, want the field named", msg)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-class="urgent"]').length`)); n != 0 {
		t.Fatal("a refused class is listed")
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue("#class-weight", "1500"),
		chromedp.Click("#class-preempt"),
		chromedp.SetValue("#class-grace", "2m"),
		chromedp.SetValue("#class-max", "24h"),
		browsertest.Loads(chromedp.Click("#class-save")),
		chromedp.WaitVisible(`[data-class="urgent"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	cells := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-class="urgent"] td')].slice(0, 6).map(td => td.innerText.trim())`))
	if strings.Join(cells, "|") != "urgent|1500|yes|no|2m0s|24h0m0s" {
		t.Fatalf("the class row says %q", cells)
	}
	if changes := run(t, ctx, chromedp.Text("[data-testid=changes]")); !strings.Contains(changes, "priority_class.created") {
		t.Errorf("the page's changes do not show the creation: %q", changes)
	}
}

// In a real browser, an admin disables a person after confirming: the page says their
// session ended and their job keeps waiting, and at once their session and API token
// are refused while the job is left as it was.
func TestDisablePersonInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ada, adaUser := s.member("ada")
	secret, _, err := s.id.CreateToken(t.Context(), adaUser, "cli", identity.ScopeRead, 24*time.Hour)
	must(t, err)
	def, err := st.ProjectByName(t.Context(), "default")
	must(t, err)
	job := &models.Job{Name: "train", ProjectID: def.ID, UserID: adaUser.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "research"}
	must(t, st.CreateJob(t.Context(), job, "test"))
	if res, _ := s.send(ada, "GET", "/", "", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("ada's session before = %d", res.StatusCode)
	}

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin"),
		browsertest.Loads(chromedp.Click(`a[href="/admin/people"]`)),
		chromedp.WaitVisible(`[data-user="ada"]`),
		browsertest.Loads(chromedp.Click(`//tr[@data-user="ada"]//button[normalize-space()="Disable…"]`)),
		chromedp.WaitVisible("#confirm-button"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if q := run(t, ctx, chromedp.Text("h1")); q != "Disable ada?" {
		t.Fatalf("disabling asks %q", q)
	}
	if res, _ := s.send(ada, "GET", "/", "", nil); res.StatusCode != http.StatusOK {
		t.Fatal("asking for confirmation already signed ada out")
	}
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#confirm-button")), chromedp.WaitVisible(".notice")); err != nil {
		t.Fatal(err)
	}
	notice := run(t, ctx, chromedp.Text(".notice"))
	status := run(t, ctx, chromedp.Text(`[data-user="ada"] .badge`))
	if notice != "Disabled ada: 1 sessions ended; 1 of their jobs keep running or waiting." || status != "disabled" {
		t.Fatalf("after disabling: notice %q, status %q", notice, status)
	}
	if res, _ := s.send(ada, "GET", "/", "", nil); res.StatusCode == http.StatusOK {
		t.Error("ada's session still works after she was disabled")
	}
	if res, _ := s.send(s.browser(), "GET", "/api/v1/jobs", "", map[string]string{"Authorization": "Bearer " + secret}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("ada's API token after she was disabled = %d, want 401", res.StatusCode)
	}
	if j, err := st.JobByID(t.Context(), job.ID); err != nil || j.State != models.JobQueued {
		t.Errorf("ada's job after she was disabled = %+v, %v; want it still queued", j, err)
	}
}

// In a real browser, an admin edits a node's labels (a line that is no key=value named,
// nothing changed), cordons it and returns it to service, then removes it after
// confirming: it stays listed, down, with its agent's credential revoked.
func TestNodeLabelsReturnAndRemoveInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newDispatchSite(t, st)
	s.join("gpu-1", "2xA100-80GB")
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin/nodes"),
		browsertest.Loads(chromedp.Click(`[data-node="gpu-1"] a[href="/admin/nodes/gpu-1"]`)),
		chromedp.WaitVisible("#node-labels"),
		chromedp.SetValue("#node-labels", "zone=eu-west\nrack 3"),
		browsertest.Loads(chromedp.Submit("#node-labels")),
		chromedp.WaitVisible(".form-error"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := run(t, ctx, chromedp.Text(".form-error")); !strings.Contains(msg, "rack 3") {
		t.Fatalf("a bad label line says %q, want the line named", msg)
	}
	if n, _ := st.NodeByName(t.Context(), "gpu-1"); strings.Contains(n.Labels, "eu-west") {
		t.Fatalf("a refused label edit stored %s", n.Labels)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue("#node-labels", "zone=eu-west\nrack=3"),
		browsertest.Loads(chromedp.Submit("#node-labels")),
		chromedp.WaitVisible(".notice"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if labels := run(t, ctx, chromedp.Value("#node-labels")); labels != "rack=3\nzone=eu-west" {
		t.Fatalf("the labels read %q after saving", labels)
	}
	for _, step := range []struct{ button, state string }{{"#cordon-gpu-1", "cordoned"}, {"#ready-gpu-1", "ready"}} {
		err := chromedp.Do(ctx,
			browsertest.Navigate(s.srv.URL+"/admin/nodes"),
			chromedp.WaitVisible(step.button),
			browsertest.Loads(chromedp.Click(step.button)),
			chromedp.WaitVisible(".notice"),
		)
		if err != nil {
			t.Fatalf("%s: %v", step.button, err)
		}
		if got := run(t, ctx, chromedp.Text(`[data-node="gpu-1"] [data-testid=state]`)); got != step.state {
			t.Fatalf("after %s the node is %q, want %s", step.button, got, step.state)
		}
	}
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(`//tr[@data-node="gpu-1"]//button[normalize-space()="Remove…"]`)),
		chromedp.WaitVisible("#confirm-button"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if q := run(t, ctx, chromedp.Text("h1")); !strings.Contains(q, "gpu-1") {
		t.Fatalf("removing asks %q", q)
	}
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#confirm-button")), chromedp.WaitVisible(".notice")); err != nil {
		t.Fatal(err)
	}
	notice := run(t, ctx, chromedp.Text(".notice"))
	rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-node="gpu-1"]').length`))
	n, err := st.NodeByName(t.Context(), "gpu-1")
	if notice != "Removed node gpu-1: its agent is refused from now on." || rows != 0 || err != nil || n.State != models.NodeDown || n.CredentialHash != "" || n.RemovedAt == nil {
		t.Fatalf("after removing: notice %q, %d rows of gpu-1, stored %+v, %v; want it hidden, down and removed with its credential revoked", notice, rows, n, err)
	}
	// The toggle shows it, labelled with the day it was removed, and hides it again.
	if toggle := run(t, ctx, chromedp.Text("[data-testid=removed-toggle]")); toggle != "Show removed (1)" {
		t.Fatalf("the toggle reads %q", toggle)
	}
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click("[data-testid=removed-toggle]")),
		chromedp.WaitVisible(`[data-node="gpu-1"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := "removed " + n.RemovedAt.UTC().Format(time.DateOnly)
	if state := run(t, ctx, chromedp.Text(`[data-node="gpu-1"] [data-testid=state]`)); state != want {
		t.Fatalf("shown, the removed node reads %q, want %q", state, want)
	}
	if toggle := run(t, ctx, chromedp.Text("[data-testid=removed-toggle]")); toggle != "Hide removed (1)" {
		t.Fatalf("the toggle reads %q once the removed nodes show", toggle)
	}
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(`[data-node="gpu-1"] a[href="/admin/nodes/gpu-1"]`)),
		chromedp.WaitVisible("[data-testid=removed]"),
	)
	if err != nil {
		t.Fatalf("the removed node's page: %v", err)
	}
}
