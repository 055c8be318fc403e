package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/web/browsertest"
)

// slowSite serves a form whose submit leads to a page with a field and a deferred script
// that comes late, as htmx does on a loaded machine: the field is visible well before
// DOMContentLoaded, when Chromium gives the page's nodes new ids.
func slowSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>first</title><form method="post" action="/next"><input id="q" name="q"></form>`)
	})
	mux.HandleFunc("POST /next", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/next", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /next", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>next</title><script defer src="/late.js"></script><input id="answer">`)
	})
	mux.HandleFunc("GET /late.js", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the late script, not a wait of the test
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.title = "next, scripted";`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// After Loads, the new page has run its deferred scripts, and a field found then takes
// input even when the action holds it until the page is complete (as on a loaded machine).
// After chromedp.Submit and WaitVisible, that action fails: "Could not find node with given id".
func TestLoadsWaitsForTheNewDocument(t *testing.T) {
	t.Parallel()
	srv := slowSite(t)
	ctx := browsertest.New(t)
	untilComplete := chromedp.After(func(ctx context.Context, tg *chromedp.Target, _ []*chromedp.Node) error {
		_, err := chromedp.Poll[chromedp.Void](`document.readyState === "complete"`)(ctx, tg)
		return err
	})
	err := chromedp.Do(ctx,
		browsertest.Navigate(srv.URL+"/"),
		chromedp.SendKeys("#q", "go"),
		browsertest.Loads(chromedp.Submit("#q")),
		chromedp.SendKeys("#answer", "42", untilComplete),
	)
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	value, err := chromedp.Run(ctx, chromedp.Value("#answer"))
	if err != nil {
		t.Fatal(err)
	}
	if title != "next, scripted" || value != "42" {
		t.Fatalf("after Loads: title %q, typed %q; want the scripted page and 42 typed", title, value)
	}
}
