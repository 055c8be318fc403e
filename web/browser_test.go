package web_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// The portal layout renders in a real browser: styles load, the navigation is there,
// the footer carries the version, and nothing is blocked by the content security policy.
func TestHomeInBrowser(t *testing.T) {
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ctx := browsertest.New(t)

	// The home page sends the browser to sign in, and back home afterwards.
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/"), chromedp.WaitVisible("#username")); err != nil {
		t.Fatal(err)
	}
	if title := run(t, ctx, chromedp.Title()); title != "Sign in · Gantry" {
		t.Fatalf("an anonymous browser landed on %q, want the sign-in page", title)
	}
	err := chromedp.Do(ctx,
		chromedp.SendKeys("#username", "admin"),
		chromedp.SendKeys("#password", s.password),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible(".user-menu"),
	)
	if err != nil {
		t.Fatal(err)
	}
	title := run(t, ctx, chromedp.Title())
	nav := run(t, ctx, chromedp.Text("nav[aria-label=Main]"))
	footer := run(t, ctx, chromedp.Text("footer"))
	bg := run(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header.top")).backgroundColor`))
	// htmx is a deferred script: the menu can be visible before it has run.
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.readyState === "complete"`)); err != nil {
		t.Fatal(err)
	}
	htmxLoaded := run(t, ctx, chromedp.Evaluate[bool](`typeof window.htmx === "object"`))
	if title != "Home · Gantry" {
		t.Errorf("title = %q", title)
	}
	for _, section := range []string{"Home", "Jobs", "Images", "Cluster", "Cost", "Feedback", "Admin"} {
		if !strings.Contains(nav, section) {
			t.Errorf("navigation lacks %s: %q", section, nav)
		}
	}
	if !strings.Contains(footer, "v0.0.0-test") {
		t.Errorf("footer = %q, want the version", footer)
	}
	if bg != "rgb(15, 23, 32)" {
		t.Errorf("header background = %q: the stylesheet did not load", bg)
	}
	if !htmxLoaded {
		t.Error("htmx did not load")
	}
	png := browsertest.Screenshot(t, ctx, "home")
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("screenshot is not a PNG")
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
