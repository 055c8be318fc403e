package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// The Secret variables field in a real browser: neither the live preview nor the form's
// re-render when a profile is chosen sends it, the re-render keeps what was typed, and
// the submitted job holds the value while its page names the variable only.
func TestSecretEnvInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	const secret = "hf_browser-7731"
	watch := `(() => { window.sent = []; document.body.addEventListener("htmx:afterRequest", e => window.sent.push(e.detail.xhr.responseURL)); return true; })()`
	choose := `(() => { const p = document.querySelector("#f-preset"); p.selectedIndex = (p.selectedIndex + 1) % p.options.length;
		p.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`
	if err := chromedp.Do(ctx, chromedp.Navigate(s.srv.URL+"/jobs/new"), chromedp.WaitVisible("#f-secret_env")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](watch)); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.SendKeys("#f-secret_env", "HF_TOKEN="+secret),
		chromedp.SendKeys("#f-name", "secret-browser"),
		chromedp.SendKeys("#f-command", "true"),
	)
	if err != nil {
		t.Fatal(err)
	}
	sent := func(want string) []string {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			urls, err := chromedp.Run(ctx, chromedp.Evaluate[[]string]("window.sent"))
			if err == nil && strings.Contains(strings.Join(urls, " "), want) {
				return urls
			}
			if time.Now().After(deadline) {
				t.Fatalf("no request with %q was sent; sent %v (%v)", want, urls, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	sent("command=true")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](choose)); err != nil {
		t.Fatal(err)
	}
	urls := sent("apply=preset")
	time.Sleep(300 * time.Millisecond) // the re-rendered form is swapped in after the request
	for _, u := range urls {
		if strings.Contains(u, "secret_env") || strings.Contains(u, "hf_browser") {
			t.Errorf("a request of the form carried the secret field: %s", u)
		}
	}
	if got, err := chromedp.Run(ctx, chromedp.Value("#f-secret_env")); err != nil || got != "HF_TOKEN="+secret {
		t.Fatalf("after the profile was chosen the secret field holds %q (%v)", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#submit-job"), chromedp.WaitVisible("[data-testid=state]")); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil || strings.Contains(page, secret) || !strings.Contains(page, "HF_TOKEN (secret)") {
		t.Fatalf("the job page shows the secret, or does not name it (%v)", err)
	}
	jobs, err := st.Jobs(context.Background(), store.JobFilter{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v", jobs, err)
	}
	if got, err := st.JobSecretEnv(context.Background(), jobs[0].ID); err != nil || got["HF_TOKEN"] != secret {
		t.Fatalf("the job's secrets = %v, %v", got, err)
	}
}
