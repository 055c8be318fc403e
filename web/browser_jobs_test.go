package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agent"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// runCluster runs the site's dispatch loop and a real agent on simulated GPUs, whose
// jobs are real processes, until the test ends.
func (s *jobSite) runCluster(gpus string) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	token, _, err := dispatch.CreateJoinToken(ctx, s.st, s.audit, time.Now(), dispatch.JoinTokenSpec{Name: "browser-node", TTL: time.Hour})
	if err != nil {
		s.t.Fatal(err)
	}
	sim, err := gpu.NewSimulated(gpus, "browser-node", time.Now)
	if err != nil {
		s.t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Server: s.srv.URL, JoinToken: token, DataDir: s.t.TempDir(), Name: "browser-node", Runtime: agentapi.RuntimeProcess,
		Version: "test", Shim: []string{os.Args[0], shimArg}, GPUs: sim, HTTP: &http.Client{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CPUMilli: 16000, MemoryMiB: 65536, ScratchMiB: 100000, PollWait: time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { s.disp.Run(ctx); done <- struct{}{} }()
	go func() { a.Run(ctx); done <- struct{}{} }()
	s.t.Cleanup(func() {
		cancel()
		<-done
		<-done
		sim.Close()
	})
}

// waitText waits until the text of sel contains want, or fails after a while.
func waitText(t *testing.T, ctx context.Context, sel, want string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		got, err := chromedp.Run(cctx, chromedp.Text(sel))
		cancel()
		if err == nil && strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q; it shows %q", sel, want, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The job pages in a real browser: a bad form is shown back with its error; the live
// preview says the job can start; submitted, its page follows it to running and
// succeeded with the output appearing while it runs; another is cancelled from its page.
func TestJobsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	s.runCluster("2xA100-80GB")
	acc := mustAccounting(t, st)
	for _, r := range []models.CostRate{
		{Resource: "gpu", GPUModel: "A100-80GB", RateMicros: 3_200_000},
		{Resource: "cpu", RateMicros: 40_000},
		{Resource: "ram", RateMicros: 5_000},
	} {
		r.EffectiveFrom = time.Now().Add(-time.Hour)
		if _, err := acc.CreateRate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)

	marker := filepath.Join(t.TempDir(), "go")
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/jobs/new"),
		chromedp.WaitVisible("#f-command"),
		chromedp.SendKeys("#f-name", "hello-browser"),
		chromedp.SendKeys("#f-command", `/bin/sh -c 'echo first line; echo "not yet`),
		browsertest.Loads(chromedp.Click("#submit-job")),
		chromedp.WaitVisible("[data-testid=form-error]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := waitText(t, ctx, "[data-testid=form-error]", "Command: has a quote that does not close", time.Second); !strings.HasPrefix(msg, "Command:") {
		t.Fatalf("form error = %q", msg)
	}
	if invalid, err := chromedp.Run(ctx, chromedp.AttributeValue("#f-command", "aria-invalid")); err != nil || invalid.Value != "true" {
		t.Fatalf("the command field is not marked invalid: %+v %v", invalid, err)
	}
	// Focus is on the field in error, which a screen reader reads with the error first.
	waitTrue(t, ctx, `document.activeElement.id === "f-command"`, "focus going to the command field in error", time.Second)
	if by, err := chromedp.Run(ctx, chromedp.AttributeValue("#f-command", "aria-describedby")); err != nil || by.Value != "form-error command-hint" {
		t.Fatalf("the command field is described by %+v (%v); want the error, then its hint", by, err)
	}
	// The job prints a line, then waits for the test to let it finish: its output must
	// show while it runs.
	script := "/bin/sh -c 'echo first line; while [ ! -e " + marker + " ]; do sleep 0.1; done; echo second line'"
	// The field is found when the value is set, not beforehand: a node id chromedp holds
	// from the page before the submit can be gone by then ("Could not find node").
	set := `(() => { const e = document.querySelector("#f-command"); e.value = ` + strconv.Quote(script) + `;
		e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](set)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=preview-start]", "Yes: it would start now on node browser-node", 15*time.Second)
	// A quarter of an A100 at 3.20, 2 cores at 0.04 and 8 GiB at 0.005 an hour.
	waitText(t, ctx, "[data-testid=preview-cost]", "0.92 USD per hour on A100-80GB", time.Second)
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#submit-job")), chromedp.WaitVisible("[data-testid=state]")); err != nil {
		t.Fatal(err)
	}
	// The scheduler may place the job before its page is drawn: the notice names the
	// state the job was in then.
	notice := waitText(t, ctx, "[data-testid=notice]", "This page follows it live.", time.Second)
	if !regexp.MustCompile(`^Job \d+ \(hello-browser\) is (queued|scheduled|running)\. This page follows it live\.$`).MatchString(notice) {
		t.Fatalf("the notice after submitting says %q", notice)
	}
	waitText(t, ctx, "[data-testid=state]", "running", 30*time.Second)
	waitText(t, ctx, "[data-testid=log-output]", "first line", 30*time.Second)
	if state := waitText(t, ctx, "[data-testid=state]", "", time.Second); !strings.Contains(state, "running") {
		t.Fatalf("the output appeared only once the job was %s", state)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-output]", "second line", 30*time.Second)
	waitText(t, ctx, "[data-testid=state]", "succeeded", 30*time.Second)
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended; the job succeeded. This is all of its output.", 10*time.Second)
	waitText(t, ctx, "[data-testid=allocations]", "SIMULATED", time.Second)
	browsertest.Screenshot(t, ctx, "job")

	// Once its output is deleted for its age, its page says so, and the live logs do
	// not say that what they show is all of it.
	page, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`/jobs/(\d+)`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the job page is at %s", page)
	}
	const deleted = "output deleted: a job's output is kept 90 days after it ends"
	if _, err := st.DeleteJobOutput(context.Background(), []store.EndedJob{{ID: mustID(t, m[1]), Attempt: 1, State: models.JobSucceeded}},
		dispatch.ReasonLogRetention, deleted, "system", func(*store.Store, []store.EndedJob) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, browsertest.Navigate(page), chromedp.WaitVisible("[data-testid=log-notices]")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-notices]", deleted, time.Second)
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended; the job succeeded. Its output was deleted, as said above.", 10*time.Second)
	if shown := waitText(t, ctx, "[data-testid=log-output]", "", time.Second); shown != "" {
		t.Errorf("the deleted output still shows: %q", shown)
	}

	// Another job runs until cancelled from its page.
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/jobs/new"),
		chromedp.WaitVisible("#f-command"),
		chromedp.SendKeys("#f-name", "long-one"),
		chromedp.SendKeys("#f-command", "/bin/sh -c 'echo started; sleep 600'"),
		chromedp.SendKeys("#f-expected_run", "2h"),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=preview-cost]", "≈ 1.84 USD for the expected 2h", 15*time.Second)
	browsertest.Screenshot(t, ctx, "job-new")
	// Saved as a template from the keyboard (Enter in its name saves, it does not submit),
	// then used from the form's list in one click, and submitted from there.
	err = chromedp.Do(ctx,
		chromedp.Focus("#f-template_name"),
		chromedp.SendKeys("#f-template_name", "long-run"+kb.Enter),
		chromedp.WaitVisible(".notice"),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".notice", "Saved template long-run of default", 5*time.Second)
	if n, err := s.st.JobCountsByState(context.Background()); err != nil || n[models.JobSucceeded] != 1 || len(n) != 1 {
		t.Fatalf("saving a template submitted a job: %v %v", n, err)
	}
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/projects/default/templates"), chromedp.WaitVisible(`tr[data-template="long-run"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, `tr[data-template="long-run"]`, "0.25 GPU, 2 CPU, 8 GiB RAM · research", time.Second)
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/jobs/new"),
		chromedp.WaitVisible("[data-testid=templates]"),
		browsertest.Loads(chromedp.Click(`a[data-template="long-run"]`)),
		chromedp.WaitVisible(".notice"),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".notice", "Filled in from template long-run", 5*time.Second)
	for sel, want := range map[string]string{"#f-name": "long-one", "#f-command": "/bin/sh -c 'echo started; sleep 600'", "#f-expected_run": "2h"} {
		if got, err := chromedp.Run(ctx, chromedp.Value(sel)); err != nil || got != want {
			t.Fatalf("the form from the template holds %q in %s, want %q (%v)", got, sel, want, err)
		}
	}
	waitText(t, ctx, "[data-testid=preview-cost]", "≈ 1.84 USD for the expected 2h", 15*time.Second)
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#submit-job")), chromedp.WaitVisible("[data-testid=state]")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=log-output]", "started", 30*time.Second)
	jobPage, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// While it runs, the cluster page shows its GPU held and each GPU's latest reading,
	// refreshed in place.
	if err := chromedp.Do(ctx, browsertest.Navigate(s.srv.URL+"/cluster"), chromedp.WaitVisible("[data-testid=nodes]")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#cluster-live", "% busy", 10*time.Second)
	first := waitText(t, ctx, "#cluster-live", "Newest GPU reading", time.Second)
	// What a person types into the node filter stays there, and so does the focus,
	// while the part around it refreshes.
	if err := chromedp.Do(ctx, chromedp.Click("#node-filter-name"), chromedp.SendKeys("#node-filter-name", "gpu-")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for waitText(t, ctx, "#cluster-live", "Newest GPU reading", time.Second) == first {
		if time.Now().After(deadline) {
			t.Fatal("the cluster page did not refresh its GPU readings")
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitTrue(t, ctx, `document.activeElement.id === "node-filter-name" && document.activeElement.value === "gpu-"`,
		"the node filter keeping what was typed and the focus through a refresh", time.Second)
	browsertest.Screenshot(t, ctx, "cluster")
	waitText(t, ctx, "#cluster-live", "0.25 of it in use", time.Second)
	if err := chromedp.Do(ctx, browsertest.Navigate(jobPage), chromedp.WaitVisible("#cancel-job")); err != nil {
		t.Fatal(err)
	}
	// Cancel asks first, on a page of its own (no script needed); confirmed, it cancels.
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#cancel-job")), chromedp.WaitVisible("#confirm-button")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#confirm-title", "Cancel job long-one", time.Second)
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#confirm-button")), chromedp.WaitVisible("[data-testid=notice]")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=notice]", "Cancelled.", time.Second)
	waitText(t, ctx, "[data-testid=state]", "cancelled", 5*time.Second)
	waitText(t, ctx, "[data-testid=timeline]", "cancelled by admin", time.Second)
	waitText(t, ctx, "[data-testid=log-status]", "Attempt 1 ended; the job was cancelled.", 10*time.Second)
}
