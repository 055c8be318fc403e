package web_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// lockedBuffer is a log that the server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// behindProxy puts a reverse proxy that logs every request line, as nginx's access log
// does, in front of s, and points s's URL at it.
func behindProxy(t *testing.T, s *jobSite) *lockedBuffer {
	t.Helper()
	target, err := url.Parse(s.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	lines := &lockedBuffer{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lines.Write([]byte(r.Method + " " + r.URL.RequestURI() + " referer=" + r.Referer() + "\n"))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	s.srv = front
	return lines
}

// The submit form in a real browser: its live requests (the preview as fields change,
// the re-render when a profile is chosen) are POSTs to /jobs/new with nothing in the URL
// (a URL ends up in a proxy's access log), so the command, which can hold a token, never
// travels in one; they leave out both environment fields, and the re-render keeps what
// was typed in them. The submitted job holds the values while its page names the secret
// variables only. Neither a proxy in front nor the server logs a secret value typed in
// either field, or the token in the command.
func TestSecretEnvInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	serverLog := &lockedBuffer{}
	s := buildLoggedJobSite(t, st, serverLog)
	s.t = t
	proxyLog := behindProxy(t, s)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	// HF_TOKEN typed under Secret variables; WANDB_API_KEY under Environment, secret by its name.
	const secret, named, inCommand = "hf_browser-7731", "wandb-browser-7732", "tok_command-7733"
	const env = "EPOCHS=3\nWANDB_API_KEY=" + named
	watch := `(() => { window.sent = []; document.body.addEventListener("htmx:afterRequest", e => window.sent.push(e.detail.requestConfig.verb.toUpperCase() + " " + e.detail.xhr.responseURL)); return true; })()`
	choose := `(() => { const p = document.querySelector("#f-preset"); p.selectedIndex = (p.selectedIndex + 1) % p.options.length;
		document.querySelector("#job-form").dataset.before = "choice"; p.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/jobs/new"), chromedp.WaitVisible("#f-secret_env")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](watch)); err != nil {
		t.Fatal(err)
	}
	// The command's quote left open: the preview saying so shows that the command reached
	// the server.
	err := chromedp.Do(ctx,
		chromedp.SendKeys("#f-secret_env", "HF_TOKEN="+secret),
		chromedp.SendKeys("#f-env", env),
		chromedp.SendKeys("#f-name", "secret-browser"),
		chromedp.SendKeys("#f-command", "true --token "+inCommand+" 'x"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`//aside[@id="preview"]//*[contains(., "quote that does not close")]`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys("#f-command", "'"), chromedp.WaitNotPresent(`//aside[@id="preview"]//*[contains(., "quote that does not close")]`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](choose)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#job-form:not([data-before])`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a preview asked for meanwhile comes back too
	urls, err := chromedp.Run(ctx, chromedp.Evaluate[[]string]("window.sent"))
	if err != nil || len(urls) < 3 {
		t.Fatalf("the form's requests: %v (%v); want the previews and the re-render", urls, err)
	}
	for _, u := range urls {
		if u != "POST "+s.srv.URL+"/jobs/new" {
			t.Errorf("a request of the form went as %s, want a POST to /jobs/new with nothing in its URL", u)
		}
	}
	if got, err := chromedp.Run(ctx, chromedp.Value("#f-secret_env")); err != nil || got != "HF_TOKEN="+secret {
		t.Fatalf("after the profile was chosen the secret field holds %q (%v)", got, err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Value("#f-env")); err != nil || got != env {
		t.Fatalf("after the profile was chosen the environment field holds %q (%v)", got, err)
	}
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#submit-job")), chromedp.WaitVisible("[data-testid=state]")); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil || strings.Contains(page, secret) || strings.Contains(page, named) || !strings.Contains(page, "EPOCHS, HF_TOKEN (secret), WANDB_API_KEY (secret)") {
		t.Fatalf("the job page shows a secret, or does not name them (%v)", err)
	}
	jobs, err := st.Jobs(context.Background(), store.JobFilter{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v", jobs, err)
	}
	if got, err := st.JobSecretEnv(context.Background(), jobs[0].ID); err != nil || got["HF_TOKEN"] != secret || got["WANDB_API_KEY"] != named {
		t.Fatalf("the job's secrets = %v, %v", got, err)
	}
	for what, log := range map[string]string{"the proxy's access log": proxyLog.String(), "the server's log": serverLog.String()} {
		if !strings.Contains(log, "/jobs/new") {
			t.Errorf("%s has no line of the form's requests: %s", what, log)
		}
		if strings.Contains(log, secret) || strings.Contains(log, named) || strings.Contains(log, inCommand) {
			t.Errorf("%s holds a secret value: %s", what, log)
		}
	}
}
