package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// signInBrowser signs the browser in as admin through the login form.
func signInBrowser(t *testing.T, ctx context.Context, s *site) {
	t.Helper()
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/login"),
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "admin"),
		chromedp.SendKeys("#password", s.password),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible(".user-menu"),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// Feedback in a real browser: file an item from the form, answer it as admin, and see
// the answer on the item's page.
func TestFeedbackInBrowser(t *testing.T) {
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/feedback"),
		chromedp.WaitVisible("#fb-title"),
		chromedp.SetValue("#fb-new-category", "capacity"),
		chromedp.SendKeys("#fb-title", "More A100 capacity on Mondays"),
		chromedp.SendKeys("#fb-body", "Our training queue waits three hours every Monday morning."),
		browsertest.Loads(chromedp.Submit("#fb-title")),
		chromedp.WaitVisible("#answer-text"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if h := run(t, ctx, chromedp.Text("h1")); h != "More A100 capacity on Mondays" {
		t.Fatalf("item page heading = %q", h)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue("#answer-status", "planned"),
		chromedp.SendKeys("#answer-text", "Two more A100 nodes arrive in January."),
		browsertest.Loads(chromedp.Submit("#answer-text")),
		chromedp.WaitVisible("[data-testid=answer]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	status := run(t, ctx, chromedp.Text("[data-testid=status]"))
	answer := run(t, ctx, chromedp.Text("[data-testid=answer]"))
	if status != "planned" || !strings.Contains(answer, "Two more A100 nodes arrive in January.") {
		t.Fatalf("after answering: status %q, answer %q", status, answer)
	}
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/feedback"), chromedp.WaitVisible("[data-testid=board]")); err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "feedback")
}

// The catalog's search narrows the list live (htmx) as the user types.
func TestImagesSearchInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	svc := images.New(st, audit.New(st, time.Now))
	for _, in := range []images.Input{
		{Name: "pytorch-2.5-cuda12.4", Reference: "nvcr.io/nvidia/pytorch:24.10-py3", Framework: "pytorch", FrameworkVersion: "2.5.0", CUDAVersion: "12.4", PythonVersion: "3.10", SizeMiB: 9800},
		{Name: "jax-0.4-cuda12.8", Reference: "ghcr.io/nvidia/jax:0.4.35", Framework: "jax", FrameworkVersion: "0.4.35", CUDAVersion: "12.8", PythonVersion: "3.12", SizeMiB: 7100},
	} {
		if _, err := svc.Add(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.SetStatus(t.Context(), "pytorch-2.5-cuda12.4", "certified"); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/images"), chromedp.WaitVisible("[data-testid=images]")); err != nil {
		t.Fatal(err)
	}
	rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=images] tbody tr").length`))
	if rows != 3 {
		t.Fatalf("catalog shows %d images, want 3 (with the built-in plain-command entry)", rows)
	}
	browsertest.Screenshot(t, ctx, "images")
	if err := chromedp.Do(ctx, chromedp.SendKeys("#q", "jax")); err != nil {
		t.Fatal(err)
	}
	// "ja" already leaves one row: the search for "jax" is done when the address bar has it too.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=images] tbody tr").length`))
		loc := run(t, ctx, chromedp.Location())
		if n == 1 && strings.Contains(loc, "q=jax") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("typing jax in the search left %d rows (want 1) at %s (want q=jax in the address bar)", n, loc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
