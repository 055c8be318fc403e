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
	const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, width: r.width}; };
	const util = box("[data-testid=chart-gpu-util]"), memory = box("[data-testid=chart-gpu-memory]");
	return {
		Height: document.documentElement.scrollHeight,
		State: box("[data-testid=state]").top, StateBottom: document.getElementById("job-state-h").closest(".card").getBoundingClientRect().bottom + scrollY, Allocations: box("[data-testid=allocations]").top,
		Logs: box("#log-output").top, Timeline: box("#timeline-fold").top, Telemetry: box("#telemetry-fold").top,
		LogsWidth: box(".logs").width, TelemetryWidth: box("[data-testid=job-telemetry]").width,
		UtilLeft: util.left, UtilTop: util.top, MemoryLeft: memory.left, MemoryTop: memory.top,
		TimelineOpen: document.getElementById("timeline-fold").open, SpecOpen: document.getElementById("spec-fold").open,
		TelemetryOpen: document.getElementById("telemetry-fold").open,
		Timelined: document.querySelector("[data-testid=timeline]").checkVisibility(),
	};
})()`

// A running job's page puts first what matters while it runs: its state, where it runs,
// then its logs, then its timeline, what it runs and its telemetry. On a laptop nothing
// wastes the width: the telemetry spans the page as the logs do, its charts side by
// side. On a phone the secondary sections fold under their headings, so the page is
// short; each opens from the keyboard and stays open while the page follows the job.
func TestJobPageLayoutInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
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
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	open := func(width, height int64) jobLayout {
		t.Helper()
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, height),
			browsertest.Navigate(page),
			chromedp.WaitReady("[data-testid=chart-gpu-util] polyline"),
		)
		if err != nil {
			t.Fatalf("open the job's page at %d × %d: %v", width, height, err)
		}
		waitText(t, ctx, "[data-testid=state]", "running", 30*time.Second)
		waitText(t, ctx, "[data-testid=log-output]", "step 60", 30*time.Second)
		return run(t, ctx, chromedp.Evaluate[jobLayout](measureJobLayout))
	}

	for _, laptop := range [][2]int64{{1366, 768}, {1280, 800}} {
		l := open(laptop[0], laptop[1])
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
	l := open(390, 664)
	t.Logf("on a phone: %+v", l)
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
}
