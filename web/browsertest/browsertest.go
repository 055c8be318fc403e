// Package browsertest drives headless Chromium (through chromedp) against real Gantry
// servers in tests. `make test` installs Chromium when missing and sets
// GANTRY_REQUIRE_BROWSER=1, under which a missing browser fails instead of skipping.
// With GANTRY_SCREENSHOTS=DIR, Screenshot also writes PNGs there (docs/screenshots).
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Environment variables read by this package.
const (
	EnvChromium       = "GANTRY_CHROMIUM"
	EnvRequireBrowser = "GANTRY_REQUIRE_BROWSER"
	EnvScreenshots    = "GANTRY_SCREENSHOTS"
)

// chromiumPath finds the browser: GANTRY_CHROMIUM, else the usual names on PATH.
func chromiumPath() string {
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless browser for t and returns a context for chromedp actions on one
// tab of a laptop-sized window. The browser is closed when t ends.
func New(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv(EnvRequireBrowser) != "" {
			t.Fatalf("no Chromium found but %s is set: the test command must install it", EnvRequireBrowser)
		}
		t.Skipf("SKIP browser: no Chromium found (set %s or run `make test`)", EnvChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.WindowSize(1280, 860),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return ctx
}

// Screenshot captures the full page; with GANTRY_SCREENSHOTS=DIR it is saved as DIR/name.png.
func Screenshot(t testing.TB, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if dir := os.Getenv(EnvScreenshots); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatalf("save screenshot %s: %v", name, err)
		}
	}
	return png
}

// Loads runs trigger, a click or a submit that makes the browser load another document,
// and returns once that document has loaded and chromedp holds its final node ids; the
// next action can then use any element of the new page.
//
// Waiting for an element of the new page is not enough. Chromium gives a document node ids
// when it commits and again at DOMContentLoaded (after the deferred scripts, htmx among
// them), discarding the first ones, and chromedp fetches each new root on a goroutine of its
// own. An element found before either (visible already) is then unknown by the time the
// action uses it: "Could not find node with given id" or "No node with given id found".
func Loads(trigger chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.RunResponse(ctx, trigger); err != nil {
			return chromedp.Void{}, fmt.Errorf("load the next page: %w", err)
		}
		return chromedp.Void{}, settle(ctx, t)
	}
}

// Navigate is chromedp.Navigate that, like Loads, returns once chromedp holds the final
// node ids of the page.
func Navigate(url string) chromedp.Action[chromedp.Void] {
	return settled(chromedp.Navigate(url))
}

// Reload is chromedp.Reload that, like Loads, returns once chromedp holds the final node ids
// of the page.
func Reload() chromedp.Action[chromedp.Void] {
	return settled(chromedp.Reload())
}

// settled runs load, an action that waits for a page's load event, and then settle.
func settled(load chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := load(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, settle(ctx, t)
	}
}

// settleAttribute is set on the loaded page's <html> to learn when chromedp has caught up.
const settleAttribute = "data-browsertest-settled"

// settle waits, on a loaded page, until chromedp has handled every DOM event the browser
// sent before now. It marks <html>, found by an id chromedp holds, with a fresh attribute:
// the browser reports the change only while that id is still current, and chromedp applies
// events in order, so once chromedp's node carries the mark it has handled the document
// updates before it. When chromedp drops the node (a later root fetched), it starts over.
func settle(ctx context.Context, t *chromedp.Target) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for attempt := 1; ; attempt++ {
		nodes, err := chromedp.Nodes(chromedp.CSS("html"))(ctx, t)
		if err != nil {
			return fmt.Errorf("find the page's root element: %w", err)
		}
		html := nodes[0]
		mark := strconv.Itoa(attempt) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		set := `document.documentElement.setAttribute(` + strconv.Quote(settleAttribute) + `, ` + strconv.Quote(mark) + `), true`
		if _, err := chromedp.Evaluate[bool](set)(ctx, t); err != nil {
			return fmt.Errorf("mark the page's root element: %w", err)
		}
		if marked(ctx, tick, html, mark) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// marked reports whether chromedp's node n comes to carry mark before it is invalidated,
// ctx ends, or a second passes (a node that the browser stopped reporting on).
func marked(ctx context.Context, tick *time.Ticker, n *chromedp.Node, mark string) bool {
	for range 200 {
		if n.AttributeValue(settleAttribute) == mark {
			return true
		}
		n.RLock()
		invalidated := n.Invalidated
		n.RUnlock()
		select {
		case <-ctx.Done():
			return false
		case <-invalidated:
			return false
		case <-tick.C:
		}
	}
	return false
}
