package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// focusShown describes the focused element, and whether the page shows where it is: an
// outline of at least 2 px (the stylesheet's ring) drawn around it.
const focusShown = `(() => {
	const e = document.activeElement;
	if (!e || e === document.body) return "";
	const s = getComputedStyle(e);
	const seen = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2;
	return (seen ? "ok " : "HIDDEN ") + "<" + e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.name ? " name=" + e.name : "") + "> " + (e.textContent || "").trim().slice(0, 30);
})()`

// From the keyboard alone every link, button and field of the main pages can be reached
// with Tab, and the one that has focus is always ringed, so a person without a mouse sees
// where they are.
func TestFocusIsVisibleInBrowser(t *testing.T) {
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	for _, path := range []string{"/", "/jobs/new", "/images", "/jobs", "/feedback", "/cost", "/alerts", "/admin/people", "/admin/join-tokens"} {
		if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+path)); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for range 80 {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				t.Fatal(err)
			}
			got := run(t, ctx, chromedp.Evaluate[string](focusShown))
			if got == "" || seen[got] {
				break // back at the start of the page
			}
			seen[got] = true
			if strings.HasPrefix(got, "HIDDEN") {
				t.Errorf("%s: focus on %s is not shown", path, strings.TrimPrefix(got, "HIDDEN "))
			}
		}
		if len(seen) < 10 {
			t.Errorf("%s: Tab reached only %d elements: %v", path, len(seen), seen)
		}
	}
}
