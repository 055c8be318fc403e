package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// A node's page charts each GPU's utilisation, memory, power and temperature from its
// stored history over the window asked for, labelled SIMULATED, and lists its health
// events with their times; an unknown window is refused by name, and a window with no
// readings says so.
func TestNodePageChartsGPUHistoryWithHealthEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		n, err := st.NodeByName(ctx, "gpu-1")
		if err != nil {
			t.Fatal(err)
		}
		devs, err := st.DevicesOfNodes(ctx, []int64{n.ID})
		if err != nil || len(devs) != 2 {
			t.Fatalf("devices of gpu-1 = %d, %v", len(devs), err)
		}
		start := seedNodeHistory(t, st, n.ID, devs)
		admin := s.signIn("admin", s.password)
		res, body := s.send(admin, "GET", "/admin/nodes/gpu-1", "", nil)
		wantStatus(t, "node page", res, http.StatusOK)
		points := map[string]string{}
		for _, m := range dataPoints.FindAllStringSubmatch(body, -1) {
			points[m[1]] = m[2]
		}
		for _, id := range []string{"chart-gpu-util", "chart-gpu-memory", "chart-gpu-power", "chart-gpu-temperature"} {
			if points[id] != "40" {
				t.Errorf("%s plots %q points; want 40 (20 samples of 2 GPUs)", id, points[id])
			}
		}
		for _, want := range []string{
			`data-testid="history-simulated">SIMULATED`,
			"Raw samples, a line per GPU, over the last 1h",
			"90 °C at its hottest, 85 °C or more for 2m0s",
			start.Add(10 * time.Minute).Format("2006-01-02 15:04:05"),
			"XID 79: GPU has fallen off the bus",
			start.Add(15 * time.Minute).Format("2006-01-02 15:04:05"),
			"uncorrected ECC errors rose from 0 to 4",
			"peak 90 °C, mean 64.5 °C, last 60 °C",
			`<strong aria-current="page">last 1h</strong>`,
			`href="/admin/nodes/gpu-1?window=24h"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("node page lacks %q", want)
			}
		}
		if strings.Contains(body, "XID 13") {
			t.Error("an XID from before the window is listed")
		}
		if got := strings.Count(body, "<td title="+`"`+devs[1].UUID+`">GPU 1</td>`); got != 3 {
			t.Errorf("GPU 1 has %d health events listed; want 3 (hot, XID, ECC)", got)
		}

		res, body = s.send(admin, "GET", "/admin/nodes/gpu-1?window=24h", "", nil)
		wantStatus(t, "node page over a day", res, http.StatusOK)
		if !strings.Contains(body, `data-testid="no-gpu-history"`) || !strings.Contains(body, `<strong aria-current="page">last 24h</strong>`) {
			t.Error("a day's window, with no 1-minute roll-ups yet, does not say it has no readings")
		}
		res, body = s.send(admin, "GET", "/admin/nodes/gpu-1?window=2y", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Window &#34;2y&#34; is not one Gantry charts: choose 1h, 6h, 24h, 7d, 30d.") {
			t.Errorf("an unknown window = %d; want 400 naming it and the windows", res.StatusCode)
		}
	})
}

// seedNodeHistory stores 20 minutes of raw samples of a node's two GPUs, from 40
// minutes ago: the second GPU at 90 °C for 3 of them, then an XID 79 with its
// uncorrected ECC count going from 0 to 4; and an XID 13 an hour before. It returns
// when the samples start.
func seedNodeHistory(t *testing.T, st *store.Store, nodeID int64, devs []models.GPUDevice) time.Time {
	t.Helper()
	ctx := context.Background()
	all := models.ReportedUtil | models.ReportedMemory | models.ReportedPower | models.ReportedTemperature | models.ReportedECC
	start := time.Now().UTC().Add(-40 * time.Minute).Truncate(time.Second)
	var rows []models.TelemetrySample
	for i := range 20 {
		at := start.Add(time.Duration(i) * time.Minute)
		for d, dev := range devs {
			r := models.TelemetrySample{NodeID: nodeID, DeviceUUID: dev.UUID, At: at, Resolution: models.ResolutionRaw, Samples: 1, Reported: all,
				UtilPct: 50, UtilMinPct: 50, UtilMaxPct: 50, MemUsedMiB: 40960, MemMinMiB: 40960, MemMaxMiB: 40960,
				PowerW: 300, PowerMinW: 300, PowerMaxW: 300, TempC: 60, TempMinC: 60, TempMaxC: 60}
			if d == 1 && i >= 10 && i < 13 {
				r.TempC, r.TempMinC, r.TempMaxC = 90, 90, 90
			}
			if d == 1 && i == 15 {
				r.XIDCount, r.LastXID = 1, 79
				r.ECCErrors = 4
			}
			if d == 1 && i > 15 {
				r.ECCErrors = 4
			}
			rows = append(rows, r)
		}
	}
	// An hour before the window: not shown over the last hour.
	old := rows[0]
	old.At, old.XIDCount, old.LastXID = start.Add(-time.Hour), 1, 13
	if err := st.InsertTelemetry(ctx, append(rows, old)); err != nil {
		t.Fatal(err)
	}
	return start
}

// In a real browser on a phone, a node's page draws its GPUs' charts and lists their
// health events within the screen's width, and its window links change the window.
func TestNodeHistoryInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newDispatchSite(t, st)
	s.join("gpu-1", "2xA100-80GB")
	n, err := st.NodeByName(t.Context(), "gpu-1")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := st.DevicesOfNodes(t.Context(), []int64{n.ID})
	if err != nil {
		t.Fatal(err)
	}
	seedNodeHistory(t, st, n.ID, devs)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		browsertest.Navigate(s.srv.URL+"/admin/nodes/gpu-1"),
		chromedp.WaitVisible("[data-testid=chart-gpu-temperature] polyline"),
	)
	if err != nil {
		t.Fatal(err)
	}
	lines := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=chart-gpu-temperature] polyline").length`))
	width := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector("[data-testid=chart-gpu-util] polyline").getBoundingClientRect().width`))
	events := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=health-events] tbody tr").length`))
	overflow := run(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if lines != 2 || width < 200 || events != 3 {
		t.Errorf("temperature lines %d, utilisation line %.0f px wide, %d health events; want 2 lines across the plot and 3 events", lines, width, events)
	}
	if overflow {
		wide := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).filter(e => !e.closest(".scroll")).slice(0, 8).map(e => e.tagName + "." + e.className + "#" + e.id + "[" + (e.getAttribute("data-testid")||"") + "] " + Math.round(e.getBoundingClientRect().right))`))
		sw := run(t, ctx, chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth]`))
		t.Errorf("the node page is wider than a phone's screen (%v): %v", sw, wide)
	}
	browsertest.Screenshot(t, ctx, "node-history")
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click(`a[href="/admin/nodes/gpu-1?window=24h"]`)), chromedp.WaitVisible("[data-testid=no-gpu-history]")); err != nil {
		t.Fatal(err)
	}
	if got := run(t, ctx, chromedp.Text(`nav[aria-label="Chart window"] [aria-current=page]`)); got != "last 24h" {
		t.Errorf("the window shown is %q; want last 24h", got)
	}
}
