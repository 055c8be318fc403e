package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// In a real browser, an admin creates a team and a project, grants a person a role in it
// from the console, and that person then sees the project.
func TestGrantRoleInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	if err := st.CreateUser(t.Context(), &models.User{Username: "ada", DisplayName: "Ada Lovelace"}); err != nil {
		t.Fatal(err)
	}
	adaPassword, err := s.id.ResetPassword(t.Context(), "ada")
	if err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(`nav a[href="/admin"]`)),
		chromedp.WaitVisible(`a[href="/admin/teams"]`),
		browsertest.Loads(chromedp.Click(`a[href="/admin/teams"]`)),
		chromedp.WaitVisible("#team-name"),
		chromedp.SendKeys("#team-name", "vision"),
		chromedp.SendKeys("#team-display", "Computer vision"),
		browsertest.Loads(chromedp.Submit("#team-name")),
		chromedp.WaitVisible(`[data-team="vision"]`),
		chromedp.SetValue("#project-team", "vision"),
		chromedp.SendKeys("#project-name", "detector"),
		browsertest.Loads(chromedp.Submit("#project-name")),
		chromedp.WaitVisible("#grant-user"),
		chromedp.SendKeys("#grant-user", "ada"),
		chromedp.SetValue("#grant-role", "member"),
		browsertest.Loads(chromedp.Click("#grant-button")),
		chromedp.WaitVisible(`[data-member="ada"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	notice := run(t, ctx, chromedp.Text(".notice"))
	changes := run(t, ctx, chromedp.Text("[data-testid=changes]"))
	if notice != "ada is now member in detector." || !strings.Contains(changes, "role.granted") || !strings.Contains(changes, "project.created") {
		t.Fatalf("after the grant: notice %q, changes %q", notice, changes)
	}
	browsertest.Screenshot(t, ctx, "admin-project")

	err = chromedp.Do(ctx,
		browsertest.Loads(chromedp.Click(".user-menu button")),
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "ada"),
		chromedp.SendKeys("#password", adaPassword),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible(".user-menu"),
		browsertest.Loads(chromedp.Click(`.user-menu a[href="/projects"]`)),
		chromedp.WaitVisible(`[data-testid=my-projects]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	row := run(t, ctx, chromedp.Text(`[data-project="detector"]`))
	if !strings.Contains(row, "detector") || !strings.Contains(row, "vision") || !strings.Contains(row, "member") {
		t.Fatalf("ada's projects row = %q", row)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('nav a[href="/admin"]').length`)); n != 0 {
		t.Error("a member sees the admin console in the navigation")
	}
}

// In a real browser, an admin sets a team's quota; a job of that team beyond it then
// waits, and the quotas page says it waits for the quota.
func TestQuotaInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newDispatchSite(t, st)
	s.join("gpu-1", "2xA100-80GB")
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin"),
		browsertest.Loads(chromedp.Click(`a[href="/admin/quotas"]`)),
		chromedp.WaitVisible("#quota-guaranteed"),
		chromedp.SetValue("#quota-team", "default"),
		chromedp.SendKeys("#quota-guaranteed", "1"),
		browsertest.Loads(chromedp.Click("#quota-save")),
		chromedp.WaitVisible(`[data-quota="default/"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := st.UserByUsername(t.Context(), "admin")
	secret, _, err := s.id.CreateToken(t.Context(), admin, "ci", identity.ScopeWrite, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + secret}
	s.submit(bearer, "first")
	second := s.submit(bearer, "second")
	s.disp.Tick(t.Context())
	if err := chromedp.Do(ctx, browsertest.Reload(), chromedp.WaitVisible("[data-testid=waiting]")); err != nil {
		t.Fatal(err)
	}
	reason := run(t, ctx, chromedp.Text(fmt.Sprintf(`[data-job="%d"]`, second)))
	use := run(t, ctx, chromedp.Text(`[data-quota="default/"] [data-testid=use]`))
	if !strings.Contains(reason, "GPU quota for any model is exhausted: 1/1 GPUs") || use != "1 GPU" {
		t.Fatalf("waiting job row %q, use %q", reason, use)
	}
	browsertest.Screenshot(t, ctx, "admin-quotas")
}

// In a real browser, an admin cordons a node, then drains it with a deadline after
// confirming, and the nodes page shows it draining until then.
func TestCordonAndDrainInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newDispatchSite(t, st)
	s.join("gpu-1", "2xA100-80GB")
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin"),
		browsertest.Loads(chromedp.Click(`a[href="/admin/nodes"]`)),
		chromedp.WaitVisible("#cordon-gpu-1"),
		browsertest.Loads(chromedp.Click("#cordon-gpu-1")),
		chromedp.WaitVisible(".notice"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st := run(t, ctx, chromedp.Text(`[data-node="gpu-1"] [data-testid=state]`)); st != "cordoned" {
		t.Fatalf("after cordoning the page says %q", st)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue("#drain-for-gpu-1", "2h"),
		browsertest.Loads(chromedp.Click("#drain-gpu-1")),
		chromedp.WaitVisible("#confirm-button"),
	)
	if err != nil {
		t.Fatal(err)
	}
	question := run(t, ctx, chromedp.Text("#confirm-message"))
	if !strings.Contains(question, "may go on for 2h0m0s") {
		t.Fatalf("the drain asks %q", question)
	}
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#confirm-button")), chromedp.WaitVisible(`[data-node="gpu-1"] [data-testid=deadline]`)); err != nil {
		t.Fatal(err)
	}
	state := run(t, ctx, chromedp.Text(`[data-node="gpu-1"] [data-testid=state]`))
	deadline := run(t, ctx, chromedp.Text(`[data-node="gpu-1"] [data-testid=deadline]`))
	n, _ := st.NodeByName(t.Context(), "gpu-1")
	if state != "draining" || n.DrainDeadline == nil || !strings.Contains(deadline, n.DrainDeadline.UTC().Format(time.DateTime)) {
		t.Fatalf("after draining: state %q, deadline %q, stored %v", state, deadline, n.DrainDeadline)
	}
	browsertest.Screenshot(t, ctx, "admin-nodes")
}
