package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// waitTrue waits until the script says true, or fails with what it waits for.
func waitTrue(t *testing.T, ctx context.Context, script, what string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := chromedp.Run(cctx, chromedp.Evaluate[bool](script))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s (%v)", what, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A job's page left open follows the job from the queue to its end without a reload:
// the state, why it waits, where it runs and the actions change with it (Cancel goes,
// Re-run stays), each new state is said in the status line a screen reader reads, the
// telemetry panel starts refreshing once the job runs, the notice of its submit says
// where it is (queued, running, ended), and a keyboard user's focus
// stays on the action it was on while the page refreshes, or, when that action goes
// (Cancel, as the job ends), moves to the one that took its place (Re-run). On a
// phone the actions fit the screen and stay reachable by keyboard.
func TestJobPageFollowsItsJobInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	// The job writes nothing until the test says, then waits again before it ends.
	dir := t.TempDir()
	speak, end := filepath.Join(dir, "speak"), filepath.Join(dir, "end")
	f := jobForm(s.csrf(ada, "/jobs/new"))
	f.Set("name", "follow-me")
	f.Set("command", "/bin/sh -c 'while [ ! -e "+speak+" ]; do sleep 0.1; done; echo first line; while [ ! -e "+end+" ]; do sleep 0.1; done; echo done'")
	res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	page := s.srv.URL + "/jobs/" + m[1]

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+res.Header.Get("Location")),
		chromedp.WaitVisible("#cancel-job"),
		chromedp.WaitVisible("[data-testid=pending]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	// A reload would forget this.
	run(t, ctx, chromedp.Evaluate[bool](`window.sameLoad = true`))
	waitText(t, ctx, "[data-testid=state]", "queued", time.Second)
	waitText(t, ctx, "[data-testid=notice]", "Job "+m[1]+" (follow-me) is queued. This page follows it live.", time.Second)
	waitText(t, ctx, "[data-testid=allocations-empty]", "Not placed yet", time.Second)
	panelTrigger := `(document.querySelector("[data-testid=job-telemetry]") || {getAttribute: () => null}).getAttribute("hx-trigger")`
	waitTrue(t, ctx, panelTrigger+` === "job-state from:body, fold-open"`, "the telemetry panel of a queued job loading", 5*time.Second)
	// By keyboard: Tab from the link before the actions reaches Hold, then Cancel.
	err = chromedp.Do(ctx,
		chromedp.Focus(`.lead a[href="/jobs"]`),
		chromedp.KeyEvent(kb.Tab),
	)
	if err != nil {
		t.Fatal(err)
	}
	if id := run(t, ctx, chromedp.Evaluate[string](`document.activeElement.id`)); id != "hold-job" {
		t.Fatalf("Tab from the jobs link focuses %q; want the Hold button", id)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	if id := run(t, ctx, chromedp.Evaluate[string](`document.activeElement.id`)); id != "cancel-job" {
		t.Fatalf("the second Tab focuses %q; want the Cancel button", id)
	}

	// A node comes: the job starts while the page is open.
	s.runCluster("2xA100-80GB")
	waitText(t, ctx, "[data-testid=state]", "running", 30*time.Second)
	waitText(t, ctx, "#job-state-said", "Job follow-me: running.", 5*time.Second)
	waitText(t, ctx, "[data-testid=notice]", "Job "+m[1]+" (follow-me) is running. This page follows it live.", time.Second)
	waitText(t, ctx, "[data-testid=allocations]", "browser-node", 5*time.Second)
	// Quiet so far, it is no longer waiting to start.
	waitText(t, ctx, "[data-testid=log-status]", "Following the output of attempt 1 live", 10*time.Second)
	visible := `(id => document.getElementById(id).getClientRects().length > 0)`
	waitTrue(t, ctx, visible+`("log-follow") && `+visible+`("log-pause") && `+visible+`("log-download")`,
		"Follow, Pause and Download showing while the attempt runs", time.Second)
	// Its run time counts on while the refreshes find nothing else changed (204).
	ran := run(t, ctx, chromedp.Evaluate[string](`document.querySelector("[data-testid=ran]").textContent`))
	waitTrue(t, ctx, `(t => /^[0-9]+s$/.test(t) && t !== `+strconv.Quote(ran)+`)(document.querySelector("[data-testid=ran]").textContent)`,
		"the run time counting on from "+ran, 5*time.Second)
	if err := os.WriteFile(speak, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-output]", "first line", 30*time.Second)
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=pending]").length`)); n != 0 {
		t.Error("a running job's page still says why it is pending")
	}
	if id := run(t, ctx, chromedp.Evaluate[string](`document.activeElement.id`)); id != "cancel-job" {
		t.Errorf("after the page followed the job, focus is on %q; want it still on Cancel", id)
	}
	waitTrue(t, ctx, `(`+panelTrigger+` || "").startsWith("every 30s")`,
		"the telemetry panel refreshing once the job runs", 10*time.Second)

	// It ends: Cancel and Hold go, Re-run and Clone are there, all in the same page load.
	if err := os.WriteFile(end, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=state]", "succeeded", 30*time.Second)
	waitText(t, ctx, "#job-state-said", "Job follow-me: succeeded.", 5*time.Second)
	waitText(t, ctx, "[data-testid=notice]", "Job "+m[1]+" (follow-me) has ended: succeeded.", time.Second)
	waitTrue(t, ctx, `!document.getElementById("cancel-job") && !document.getElementById("hold-job") && !!document.getElementById("rerun-job")`,
		"Cancel and Hold leaving, Re-run staying", 5*time.Second)
	waitTrue(t, ctx, `document.activeElement.id === "rerun-job"`,
		"focus, on Cancel as the job ended, going to Re-run (not the top of the page)", 2*time.Second)
	waitText(t, ctx, "[data-testid=actions]", "Clone", time.Second)
	waitText(t, ctx, "[data-testid=timeline]", "succeeded", time.Second)
	waitText(t, ctx, "[data-testid=log-output]", "done", 10*time.Second)
	// Nothing more can come: Follow and Pause go, Download stays.
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended", 10*time.Second)
	waitTrue(t, ctx, `!`+visible+`("log-follow") && !`+visible+`("log-pause") && `+visible+`("log-download")`,
		"Follow and Pause leaving once the attempt ended, Download staying", time.Second)
	if !run(t, ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)) {
		t.Fatal("the page was reloaded; it should have followed the job in place")
	}

	// On a phone: nothing wider than the screen, and the actions in view and in reach of Tab.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		browsertest.Navigate(page),
		chromedp.WaitVisible("#rerun-job"),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The page of an ended job, opened anew, shows them neither.
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended", 10*time.Second)
	if !run(t, ctx, chromedp.Evaluate[bool](`!`+visible+`("log-follow") && !`+visible+`("log-pause") && `+visible+`("log-download")`)) {
		t.Error("the page of an ended job offers to follow or pause its log")
	}
	if run(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)) {
		t.Error("the job page is wider than a phone's screen")
	}
	inView := `(() => { const r = document.getElementById("clone-job").getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth; })()`
	if !run(t, ctx, chromedp.Evaluate[bool](inView)) {
		t.Error("the Clone action is off a phone's screen")
	}
	err = chromedp.Do(ctx,
		chromedp.Focus(`.lead a[href="/jobs"]`),
		chromedp.KeyEvent(kb.Tab),
	)
	if err != nil {
		t.Fatal(err)
	}
	if id := run(t, ctx, chromedp.Evaluate[string](`document.activeElement.id`)); id != "rerun-job" {
		t.Errorf("on a phone, Tab from the jobs link focuses %q; want Re-run", id)
	}
}

// A job's page left open after its session ended (here: signed out in another tab)
// goes to the login page at its next refresh, instead of showing the login page inside
// itself; signed in again, the user is back on the job's page.
func TestJobPageAfterItsSessionEndsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/jobs/"+m[1]), chromedp.WaitVisible("#cancel-job")); err != nil {
		t.Fatal(err)
	}
	other, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(other, browsertest.Navigate(s.srv.URL+"/"), chromedp.WaitVisible(".user-menu")); err != nil {
		t.Fatal(err)
	}
	signOutBrowser(t, other)
	waitTrue(t, ctx, `location.pathname === "/login" && new URLSearchParams(location.search).get("next") === "/jobs/`+m[1]+`"`,
		"the job's page going to the login page, and back afterwards", 10*time.Second)
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#job-live").length`)); n != 0 {
		t.Fatal("the login page holds the job's live part")
	}
	err := chromedp.Do(ctx,
		chromedp.WaitVisible("#username"),
		chromedp.SendKeys("#username", "admin"),
		chromedp.SendKeys("#password", s.password),
		browsertest.Loads(chromedp.Submit("#password")),
		chromedp.WaitVisible("#cancel-job"),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=state]", "queued", time.Second)
}

// The log picker of a job's page left open gains the attempt of each retry as it comes,
// without a reload: the first attempt fails, the page follows the retry's output, the
// picker lists both, and attempt 1 picked shows its own output and stays picked while
// the page goes on following the job to its end.
func TestJobPageLogPickerFollowsRetriesInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	end := filepath.Join(t.TempDir(), "end")
	f := jobForm(s.csrf(ada, "/jobs/new"))
	f.Set("name", "retry-me")
	f.Set("retries", "1")
	f.Set("command", `/bin/sh -c 'if [ "$GANTRY_ATTEMPT" = 1 ]; then echo first try; exit 3; fi; echo second try; while [ ! -e `+end+` ]; do sleep 0.1; done'`)
	res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	options := `[...document.querySelectorAll("#log-attempt option")].map(o => o.value + ":" + o.textContent).join(",")`

	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/jobs/"+m[1]), chromedp.WaitVisible("#log-attempt")); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, chromedp.Evaluate[bool](`window.sameLoad = true`))
	if got := run(t, ctx, chromedp.Evaluate[string](options)); got != ":latest" {
		t.Fatalf("the picker of a queued job lists %q; want latest alone", got)
	}

	s.runCluster("2xA100-80GB")
	waitText(t, ctx, "[data-testid=log-output]", "second try", 30*time.Second)
	waitText(t, ctx, "[data-testid=log-status]", "Following the output of attempt 2 live", 5*time.Second)
	waitTrue(t, ctx, options+` === ":latest,1:1,2:2"`, "the picker listing attempts 1 and 2", 10*time.Second)

	run(t, ctx, chromedp.Evaluate[bool](`(s => { s.value = "1"; s.dispatchEvent(new Event("change")); return true; })(document.getElementById("log-attempt"))`))
	waitText(t, ctx, "[data-testid=log-output]", "first try", 10*time.Second)
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended", 5*time.Second)
	if out := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("log-output").textContent`)); strings.Contains(out, "second try") {
		t.Errorf("attempt 1 picked shows %q", out)
	}

	// The job ends; its live part, drawn again, leaves the pick and the list as they are.
	if err := os.WriteFile(end, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=state]", "succeeded", 30*time.Second)
	if got := run(t, ctx, chromedp.Evaluate[string](options+` + " picked " + document.getElementById("log-attempt").value`)); got != ":latest,1:1,2:2 picked 1" {
		t.Errorf("after the job ended the picker is %q; want attempts 1 and 2, 1 picked", got)
	}
	if !run(t, ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)) {
		t.Fatal("the page was reloaded; it should have followed the job in place")
	}
}

// browserOnJob submits script as a job of a member and opens its page in a signed-in
// browser; the job runs once the test runs a cluster. It returns the page's path too.
func browserOnJob(t *testing.T, script string) (*jobSite, context.Context, string) {
	t.Helper()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	f := jobForm(s.csrf(ada, "/jobs/new"))
	f.Set("name", "chatty")
	f.Set("command", "/bin/sh -c '"+script+"'")
	res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/jobs/"+m[1]), chromedp.WaitVisible("#log-output")); err != nil {
		t.Fatal(err)
	}
	return s, ctx, "/jobs/" + m[1]
}

// A chatty job's page keeps the last few MiB of its output in view: live output past 4
// MiB is trimmed from the front, and a page opened later starts on the last 2 MiB;
// either way a note above the output says how much is not shown.
func TestJobPageLogKeepsTheLastOutputInBrowser(t *testing.T) {
	end := filepath.Join(t.TempDir(), "end")
	// 100 lines of 64 KiB: 6.25 MiB.
	s, ctx, page := browserOnJob(t, `i=0; while [ $i -lt 100 ]; do head -c 65535 /dev/zero | tr "\0" x; echo; i=$((i+1)); done; while [ ! -e `+end+` ]; do sleep 0.1; done`)
	s.runCluster("2xA100-80GB")
	shown := `new TextEncoder().encode(document.getElementById("log-output").textContent).length`
	waitText(t, ctx, "[data-testid=log-left-out]", "of earlier output is not shown here: Download has all of it.", 60*time.Second)
	waitTrue(t, ctx, `document.getElementById("log-output").textContent.endsWith("x\n")`, "the last line shown", 60*time.Second)
	if n := run(t, ctx, chromedp.Evaluate[int](shown)); n > 4<<20+64<<10 {
		t.Errorf("the page holds %d bytes of output; want at most 4 MiB and a chunk", n)
	}
	if err := os.WriteFile(end, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=state]", "succeeded", 30*time.Second)

	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+page)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-status]", "This is the end of its output; Download has all of it.", 30*time.Second)
	if note := waitText(t, ctx, "[data-testid=log-left-out]", "not shown", time.Second); !strings.HasPrefix(note, "[4.3 MiB of earlier output") {
		t.Errorf("the page opened after the job says %q; want 4.3 MiB left out", note)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](shown)); n > 2<<20+len("[4.3 MiB of earlier output is not shown here: Download has all of it.]\n") {
		t.Errorf("the page opened after the job holds %d bytes of output; want at most 2 MiB and the note", n)
	}
}

// While the log is paused it holds back the last 4 MiB of new output at most, and says
// at once how much more it let go; resumed, it shows what it held.
func TestJobPageLogPausedHoldsTheLastOutputInBrowser(t *testing.T) {
	dir := t.TempDir()
	start, end := filepath.Join(dir, "start"), filepath.Join(dir, "end")
	s, ctx, _ := browserOnJob(t, `echo ready; while [ ! -e `+start+` ]; do sleep 0.1; done; i=0; while [ $i -lt 100 ]; do head -c 65535 /dev/zero | tr "\0" x; echo; i=$((i+1)); done; echo last line; while [ ! -e `+end+` ]; do sleep 0.1; done`)
	s.runCluster("2xA100-80GB")
	waitText(t, ctx, "[data-testid=log-output]", "ready", 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click("#log-pause")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-left-out]", "of earlier output is not shown here", 60*time.Second)
	if out := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("log-output").textContent`)); strings.Contains(out, "xxx") {
		t.Fatal("a paused log showed new output")
	}
	if err := chromedp.Do(ctx, chromedp.Click("#log-pause")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-output]", "last line", 30*time.Second)
	if n := run(t, ctx, chromedp.Evaluate[int](`new TextEncoder().encode(document.getElementById("log-output").textContent).length`)); n > 4<<20+64<<10+200 {
		t.Errorf("the resumed page holds %d bytes of output; want at most 4 MiB, a chunk and the note", n)
	}
	if err := os.WriteFile(end, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A log paused while the job waits stays paused when the job starts, and says so.
func TestJobPageLogPausedBeforeTheStartInBrowser(t *testing.T) {
	end := filepath.Join(t.TempDir(), "end")
	s, ctx, _ := browserOnJob(t, `echo hello; while [ ! -e `+end+` ]; do sleep 0.1; done`)
	waitText(t, ctx, "[data-testid=log-status]", "Waiting for the job to start", 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click("#log-pause")); err != nil {
		t.Fatal(err)
	}
	s.runCluster("2xA100-80GB")
	waitText(t, ctx, "[data-testid=log-status]", "Paused: attempt 1 runs; its new output is kept and shown when you resume.", 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click("#log-pause")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-output]", "hello", 10*time.Second)
	if err := os.WriteFile(end, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
