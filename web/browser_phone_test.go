package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// overflowing names what sticks out past the right edge of the window, outside any
// element that scrolls sideways (a wide table in div.scroll may): elements without such
// children, and text that does not wrap. Empty when the page fits.
const overflowing = `(() => {
	const width = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth <= width) return "";
	const scrolls = e => { for (; e; e = e.parentElement) { const o = getComputedStyle(e).overflowX; if (o === "auto" || o === "scroll") return true; } return false; };
	const out = [];
	for (const e of document.body.querySelectorAll("*")) {
		const wide = x => x.getBoundingClientRect().right > width + 1;
		if (wide(e) && ![...e.children].some(wide) && !scrolls(e)) out.push("<" + e.tagName.toLowerCase() + " class=" + JSON.stringify(e.className) + "> " + e.textContent.trim().slice(0, 60));
	}
	const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n; (n = walk.nextNode()); ) {
		const r = document.createRange(); r.selectNodeContents(n);
		if (r.getBoundingClientRect().right > width + 1 && !scrolls(n.parentElement)) out.push("text " + JSON.stringify(n.textContent.trim().slice(0, 60)));
	}
	return "the page is " + document.documentElement.scrollWidth + " px wide: " + (out.join("; ") || "nothing found");
})()`

// On a phone (390 px wide) no page is wider than the screen: wide tables scroll inside
// their own box and long words wrap, so nothing needs sideways scrolling of the page.
func TestPhoneWidthInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	s.join("gpu-node-1", "2xA100-80GB")
	if _, _, err := dispatch.CreateJoinToken(context.Background(), st, s.audit, time.Now(), dispatch.JoinTokenSpec{Name: "rack-2", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	admin := s.signIn("admin", s.password)
	form := jobForm(s.csrf(admin, "/jobs/new"))
	res, body := s.send(admin, "POST", "/jobs", form.Encode(), nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit a job: %d %s", res.StatusCode, body)
	}
	job, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/", "/images", "/jobs", "/jobs/new", job.Path, "/cluster", "/cost", "/alerts", "/feedback", "/projects", "/tokens",
		"/admin", "/admin/people", "/admin/teams", "/admin/projects/default", "/admin/quotas", "/admin/nodes", "/admin/nodes/gpu-node-1",
		"/admin/join-tokens", "/admin/priority-classes", "/admin/settings", "/admin/audit",
		"/admin/cost/rates", "/admin/cost/budgets", "/admin/cost/rules", "/admin/cost/channels",
	} {
		if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+path)); err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		if wide := run(t, ctx, chromedp.Evaluate[string](overflowing)); wide != "" {
			t.Errorf("%s on a phone: %s", path, wide)
		}
		switch path {
		case "/":
			browsertest.Screenshot(t, ctx, "phone-home")
		case "/jobs":
			browsertest.Screenshot(t, ctx, "phone-jobs")
		}
	}
}

// The submit form says where its preview is, and it is there at every width: beside
// the form on a laptop, below it on a phone (390 px wide), where it comes after
// "Save as a template".
func TestSubmitFormSaysWhereItsPreviewIsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	const where = `(() => {
		const p = document.getElementById("preview").getBoundingClientRect();
		const f = document.querySelector(".submit-layout > div").getBoundingClientRect();
		if (p.left >= f.right) return "beside";
		if (p.top >= f.bottom) return "below";
		return "elsewhere";
	})()`
	for _, c := range []struct {
		width, height int64
		want          string
	}{{1280, 900, "beside"}, {390, 844, "below"}} {
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(c.width, c.height),
			browsertest.Navigate(s.srv.URL+"/jobs/new"),
			chromedp.WaitVisible("#preview"),
		)
		if err != nil {
			t.Fatal(err)
		}
		if got := run(t, ctx, chromedp.Evaluate[string](where)); got != c.want {
			t.Errorf("%d px wide, the preview is %s the form; want %s", c.width, got, c.want)
		}
		lead := run(t, ctx, chromedp.Text("[data-testid=form-lead]"))
		if !strings.Contains(lead, "“Before you submit”, beside the form (below it on a narrow screen)") {
			t.Errorf("the form's lead does not say where its preview is at every width: %q", lead)
		}
	}
}

// On a phone the jobs list's filters fold under a summary that says which are set, so the
// first job shows on the first screen; they open from the keyboard, a filter set there
// narrows the list in place and the fold stays open. On a laptop they show unfolded.
func TestJobsFiltersFoldOnPhoneInBrowser(t *testing.T) {
	s := newJobsSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}))
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	const (
		open     = `document.getElementById("job-filters").open`
		summary  = `document.querySelector("#job-filters summary").textContent`
		rowCount = `document.querySelectorAll("[data-testid=jobs] tbody tr").length`
		// firstRowShown: the first job row lies wholly inside the first screen.
		firstRowShown = `(() => { const r = document.querySelector("[data-testid=jobs] tbody tr").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`
		stateShown    = `document.querySelector("select[name=state]").checkVisibility()`
	)
	err := chromedp.Do(ctx,
		// 390 × 664 is what Safari leaves of an iPhone's 390 × 844 screen under its bars.
		chromedp.EmulateViewport(390, 664),
		browsertest.Navigate(s.srv.URL+"/jobs"),
		chromedp.WaitVisible("[data-testid=jobs]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if run(t, ctx, chromedp.Evaluate[bool](open)) || run(t, ctx, chromedp.Evaluate[bool](stateShown)) {
		t.Error("on a phone the filters are not folded")
	}
	if !run(t, ctx, chromedp.Evaluate[bool](firstRowShown)) {
		t.Error("on a phone the first job is not on the first screen")
	}
	if got := run(t, ctx, chromedp.Evaluate[string](summary)); !strings.Contains(got, "none set") {
		t.Errorf("folded filters' summary = %q, want it to say none is set", got)
	}
	err = chromedp.Do(ctx,
		chromedp.Focus("#job-filters summary"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Poll[chromedp.Void](stateShown),
		chromedp.SendKeys(`input[name=user]`, "bob"+kb.Enter),
		chromedp.Poll[chromedp.Void](rowCount+` === 4`),
	)
	if err != nil {
		t.Fatalf("open the filters with Enter and filter by user: %v (%d rows)", err, run(t, ctx, chromedp.Evaluate[int](rowCount)))
	}
	if !run(t, ctx, chromedp.Evaluate[bool](open)) {
		t.Error("the filters fold again when the list is replaced")
	}
	if got := run(t, ctx, chromedp.Evaluate[string](summary)); !strings.Contains(got, "1 set: user") {
		t.Errorf("summary after filtering by user = %q, want it to name the user filter", got)
	}
	if loc := run(t, ctx, chromedp.Location()); !strings.Contains(loc, "user=bob") {
		t.Errorf("the address bar does not keep the filter: %s", loc)
	}
	// Reloaded on the phone with a filter set, the fold is closed and names it.
	if err := chromedp.Do(ctx, browsertest.Reload(), chromedp.WaitVisible("[data-testid=jobs]")); err != nil {
		t.Fatal(err)
	}
	if run(t, ctx, chromedp.Evaluate[bool](open)) || !strings.Contains(run(t, ctx, chromedp.Evaluate[string](summary)), "1 set: user") {
		t.Errorf("reloaded with a filter set: open=%v, summary %q", run(t, ctx, chromedp.Evaluate[bool](open)), run(t, ctx, chromedp.Evaluate[string](summary)))
	}

	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 800),
		browsertest.Navigate(s.srv.URL+"/jobs"),
		chromedp.WaitVisible("[data-testid=jobs]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	shown := run(t, ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#job-filters .fields > *")].filter((e) => e.checkVisibility()).length`))
	if !run(t, ctx, chromedp.Evaluate[bool](open)) || shown != 9 {
		t.Errorf("on a laptop %d of the 9 filter controls show (open=%v)", shown, run(t, ctx, chromedp.Evaluate[bool](open)))
	}
}
