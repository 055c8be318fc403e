package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
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
		chromedp.Click(`nav a[href="/admin"]`),
		chromedp.WaitVisible(`a[href="/admin/teams"]`),
		chromedp.Click(`a[href="/admin/teams"]`),
		chromedp.WaitVisible("#team-name"),
		chromedp.SendKeys("#team-name", "vision"),
		chromedp.SendKeys("#team-display", "Computer vision"),
		chromedp.Submit("#team-name"),
		chromedp.WaitVisible(`[data-team="vision"]`),
		chromedp.SetValue("#project-team", "vision"),
		chromedp.SendKeys("#project-name", "detector"),
		chromedp.Submit("#project-name"),
		chromedp.WaitVisible("#grant-user"),
		chromedp.SendKeys("#grant-user", "ada"),
		chromedp.SetValue("#grant-role", "member"),
		chromedp.Click("#grant-button"),
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
		chromedp.Click(".user-menu button"),
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "ada"),
		chromedp.SendKeys("#password", adaPassword),
		chromedp.Submit("#password"),
		chromedp.WaitVisible(".user-menu"),
		chromedp.Click(`.user-menu a[href="/projects"]`),
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
