package web_test

import (
	"context"
	"net/http"
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

// jobLayout is where a job page's parts lie, in CSS pixels of the whole page.
type jobLayout struct {
	Height                                           float64
	State, Allocations, Logs, Timeline, Telemetry    float64 // tops
	LogsWidth, TelemetryWidth                        float64
	UtilLeft, UtilTop, MemoryLeft, MemoryTop         float64 // two GPU charts
	StateBottom                                      float64
	TimelineOpen, SpecOpen, TelemetryOpen, Timelined bool // Timelined: the timeline's list shows
}

const measureJobLayout = `(() => {
	const box = (sel) => { const e = document.querySelector(sel); if (!e) { return {}; } const r = e.getBoundingClientRect(); return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, width: r.width}; };
	const util = box("[data-testid=chart-gpu-util]"), memory = box("[data-testid=chart-gpu-memory]");
	return {
		Height: document.documentElement.scrollHeight,
		State: box("[data-testid=state]").top, StateBottom: document.getElementById("job-state-h").closest(".card").getBoundingClientRect().bottom + scrollY, Allocations: box("[data-testid=allocations]").top,
		Logs: box("#log-output").top, Timeline: box("#timeline-fold").top, Telemetry: box("#telemetry-fold").top,
		LogsWidth: box(".logs").width, TelemetryWidth: box("[data-testid=job-telemetry]").width || 0,
		UtilLeft: util.left || 0, UtilTop: util.top || 0, MemoryLeft: memory.left || 0, MemoryTop: memory.top || 0,
		TimelineOpen: document.getElementById("timeline-fold").open, SpecOpen: document.getElementById("spec-fold").open,
		TelemetryOpen: document.getElementById("telemetry-fold").open,
		Timelined: document.querySelector("[data-testid=timeline]").checkVisibility(),
	};
})()`

// A running job's page puts first what matters while it runs: its state, where it runs,
// then its logs, then its timeline, what it runs and its telemetry. On a laptop nothing
// wastes the width: the telemetry spans the page as the logs do, its charts side by
// side, loaded with the page. On a phone the secondary sections fold under their
// headings, so the page is short; each opens from the keyboard and stays open while the
// page follows the job. The folded telemetry is not fetched until it is opened, nor
// refreshed while folded.
func TestJobPageLayoutInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	requests := behindProxy(t, s)
	s.runCluster("2xA100-80GB")
	admin := s.signIn("admin", s.password)
	form := jobForm(s.csrf(admin, "/jobs/new"))
	form.Set("command", `/bin/sh -c 'for i in $(seq 1 60); do echo step $i loss 0.$i; done; sleep 600'`)
	res, body := s.send(admin, "POST", "/jobs", form.Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("submit = %d %s", res.StatusCode, body)
	}
	page := s.srv.URL + "/jobs/" + m[1]
	// asked counts the requests that reached the server for the page's telemetry panel,
	// and for the page itself (its live part's refreshes, every 2 s, among them).
	asked := func(what string) int {
		prefix := map[string]string{"telemetry": "GET /jobs/" + m[1] + "/telemetry ", "page": "GET /jobs/" + m[1] + "?"}[what]
		n := 0
		for _, line := range strings.Split(requests.String(), "\n") {
			if strings.HasPrefix(line, prefix) {
				n++
			}
		}
		return n
	}
	// refreshed waits until the live part has refreshed twice more: any request htmx
	// sends for the page's load, or for an event before the wait, has reached the server.
	refreshed := func(why string) {
		t.Helper()
		want := asked("page") + 2
		for deadline := time.Now().Add(15 * time.Second); asked("page") < want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the job's page did not refresh its live part twice in 15 s", why)
			}
		}
	}
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	open := func(width, height int64, charts ...chromedp.Action[chromedp.Void]) jobLayout {
		t.Helper()
		err := chromedp.Do(ctx, append([]chromedp.Action[chromedp.Void]{
			chromedp.EmulateViewport(width, height),
			browsertest.Navigate(page),
		}, charts...)...)
		if err != nil {
			t.Fatalf("open the job's page at %d × %d: %v", width, height, err)
		}
		waitText(t, ctx, "[data-testid=state]", "running", 30*time.Second)
		waitText(t, ctx, "[data-testid=log-output]", "step 60", 30*time.Second)
		return run(t, ctx, chromedp.Evaluate[jobLayout](measureJobLayout))
	}

	for _, laptop := range [][2]int64{{1366, 768}, {1280, 800}} {
		before := asked("telemetry")
		// Served open, the telemetry loads with the page.
		l := open(laptop[0], laptop[1], chromedp.WaitReady("[data-testid=chart-gpu-util] polyline"))
		if asked("telemetry") == before {
			t.Errorf("at %d px the telemetry's charts drew without a request for them", laptop[0])
		}
		if !(l.State < l.Allocations && l.Allocations < l.Logs && l.Logs < l.Timeline && l.Timeline < l.Telemetry) {
			t.Errorf("at %d px the parts are not state, allocations, logs, timeline, telemetry from the top: %+v", laptop[0], l)
		}
		if l.TelemetryWidth < l.LogsWidth-1 {
			t.Errorf("at %d px the telemetry is %.0f px wide, the logs %.0f px", laptop[0], l.TelemetryWidth, l.LogsWidth)
		}
		if l.UtilTop != l.MemoryTop || l.MemoryLeft <= l.UtilLeft {
			t.Errorf("at %d px the GPU charts are not side by side: %+v", laptop[0], l)
		}
		if !l.TimelineOpen || !l.SpecOpen || !l.TelemetryOpen {
			t.Errorf("at %d px a section is folded: %+v", laptop[0], l)
		}
	}

	// A phone, less what Safari's bars take of it.
	telemetry := asked("telemetry")
	l := open(390, 664)
	t.Logf("on a phone: %+v", l)
	refreshed("a phone")
	if n := asked("telemetry") - telemetry; n != 0 {
		t.Errorf("on a phone the folded telemetry was fetched %d times before it was opened", n)
	}
	if wide := run(t, ctx, chromedp.Evaluate[string](overflowing)); wide != "" {
		t.Errorf("the job's page on a phone: %s", wide)
	}
	if l.TimelineOpen || l.SpecOpen || l.TelemetryOpen || l.Timelined {
		t.Errorf("on a phone the secondary sections are not folded: %+v", l)
	}
	if l.StateBottom > 664 {
		t.Errorf("on a phone the job's state ends %.0f px down, below the first screen", l.StateBottom)
	}
	// It was 5,100 px with the sections open, the telemetry's charts one under another.
	if l.Height > 2100 || !(l.State < l.Allocations && l.Allocations < l.Logs && l.Logs < l.Timeline) {
		t.Errorf("on a phone the page is %.0f px tall (want at most 2,100), its parts %+v", l.Height, l)
	}
	// Each placement is a block that fits the width, every figure under its column's
	// name, and the log controls take two rows at most.
	phone := run(t, ctx, chromedp.Evaluate[struct {
		AllocScroll, AllocWidth, LogControlRows int
		AllocText                               string
	}](`(() => {
		const allocs = document.querySelector("[data-testid=allocations]").closest(".scroll");
		let rows = 0, bottom = -Infinity;
		for (const c of document.querySelector(".log-controls").children) {
			const r = c.getBoundingClientRect();
			if (r.top >= bottom) { rows++; }
			bottom = Math.max(bottom, r.bottom);
		}
		return {AllocScroll: allocs.scrollWidth, AllocWidth: allocs.clientWidth, LogControlRows: rows, AllocText: allocs.innerText};
	})()`))
	if phone.AllocScroll > phone.AllocWidth {
		t.Errorf("on a phone the allocations scroll sideways: %d px in %d", phone.AllocScroll, phone.AllocWidth)
	}
	for _, label := range []string{"Node", "GPUs", "State", "Attempt", "Replica", "Started", "Ended"} {
		if !strings.Contains(phone.AllocText, label) {
			t.Errorf("on a phone the allocations do not name %s: %q", label, phone.AllocText)
		}
	}
	if phone.LogControlRows > 2 {
		t.Errorf("on a phone the log controls take %d rows; want at most 2", phone.LogControlRows)
	}
	browsertest.Screenshot(t, ctx, "phone-job")
	err := chromedp.Do(ctx,
		chromedp.Focus("#timeline-fold summary"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=timeline]").checkVisibility()`),
	)
	if err != nil {
		t.Fatalf("open the timeline with Enter: %v", err)
	}
	// Something new happens to the job: the refresh draws it into the open timeline,
	// and the folds stay as the user left them.
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.NoteJob(context.Background(), id, models.JobRunning, "slurm", "moved to node c12", "system"); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "[data-testid=timeline]", "moved to node c12", 10*time.Second)
	l = run(t, ctx, chromedp.Evaluate[jobLayout](measureJobLayout))
	if !l.TimelineOpen || !l.Timelined || l.SpecOpen || l.TelemetryOpen {
		t.Errorf("after a refresh the folds are not as left (timeline open, others folded): %+v", l)
	}
	if got := run(t, ctx, chromedp.Evaluate[string](`document.activeElement.closest("details") ? document.activeElement.closest("details").id : document.activeElement.tagName`)); got != "timeline-fold" {
		t.Errorf("after a refresh focus is on %s; want it still on the timeline's heading", got)
	}
	if strings.Count(run(t, ctx, chromedp.Evaluate[string](`document.body.innerHTML`)), `id="job-timeline"`) != 1 {
		t.Error("the refresh left two timelines on the page")
	}

	// Opened from the keyboard, the telemetry loads; it refreshes when the page says the
	// job's state changed, as its live part does. panels counts the panels htmx has drawn
	// (swapped in and set going) since.
	if n := asked("telemetry") - telemetry; n != 0 {
		t.Errorf("on a phone the folded telemetry was fetched %d times while the page followed the job", n)
	}
	run(t, ctx, chromedp.Evaluate[bool](`window.panels = 0, document.body.addEventListener("htmx:load", e => { if (e.target.id === "job-telemetry") { panels++; } }), true`))
	drawn := func(n int, what string) {
		t.Helper()
		waitTrue(t, ctx, "panels >= "+strconv.Itoa(n), what, 10*time.Second)
		if got := asked("telemetry") - telemetry; got != n {
			t.Errorf("%s: the telemetry was fetched %d times in all; want %d", what, got, n)
		}
	}
	toggle := func(what string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Focus("#telemetry-fold summary"), chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatalf("%s the telemetry with Enter: %v", what, err)
		}
	}
	stateChanged := chromedp.Evaluate[bool](`document.body.dispatchEvent(new CustomEvent("job-state", {detail: {value: "running"}}))`)
	toggle("open")
	drawn(1, "the telemetry opened")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("[data-testid=chart-gpu-util] polyline")); err != nil {
		t.Fatalf("the opened telemetry's charts: %v", err)
	}
	run(t, ctx, stateChanged)
	drawn(2, "the telemetry open, the job's state changed")
	// Folded again, it is not refreshed; opened again, it is, at once.
	toggle("fold")
	run(t, ctx, stateChanged)
	refreshed("the telemetry folded, the job's state changed")
	if n := asked("telemetry") - telemetry; n != 2 || run(t, ctx, chromedp.Evaluate[int](`panels`)) != 2 {
		t.Errorf("the folded telemetry was refreshed: fetched %d times in all, want still twice", n)
	}
	toggle("open again")
	drawn(3, "the telemetry opened again")
}
