// Package browsertest drives headless Chromium (through chromedp) against real Gantry
// servers in tests. `make test` installs Chromium when missing and sets
// GANTRY_REQUIRE_BROWSER=1, under which a missing browser fails instead of skipping.
// With GANTRY_SCREENSHOTS=DIR, Screenshot also writes PNGs there (docs/screenshots).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
