package web_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// telemetryJob is a job that has run for 50 minutes on a simulated GPU: idle for the
// last 45, with the loss and throughput it reported and two checkpoints.
func telemetryJob(t *testing.T, st *store.Store, cfg store.Config, project *models.Project, user *models.User, withHistory bool) (*models.Job, int) {
	t.Helper()
	ctx := context.Background()
	node := &models.Node{Name: fmt.Sprint("sim-", time.Now().UnixNano()), State: models.NodeReady, Simulated: true}
	if err := st.SaveNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	uuid := "GPU-" + node.Name
	if err := st.ReplaceNodeDevices(ctx, node.ID, []store.NodeDevice{{GPUDevice: models.GPUDevice{UUID: uuid, Model: "L4-24GB", MemoryMiB: 24576, Healthy: true}}}); err != nil {
		t.Fatal(err)
	}
	j := &models.Job{Name: "train", ProjectID: project.ID, UserID: user.ID, Command: `["python","train.py"]`, Env: "{}", GPUs: 1, CPUMilli: 4000,
		MemoryMiB: 8192, Replicas: 1, Kind: models.KindTraining, PriorityClass: "research"}
	if err := st.CreateJob(ctx, j, "user:"+user.Username); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAllocations(ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: node.ID, State: models.AllocRunning,
		Devices: `[{"uuid":"` + uuid + `","milli":1000}]`}}); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-50 * time.Minute).Truncate(time.Second)
	storetest.Exec(t, cfg, fmt.Sprintf("UPDATE jobs SET started_at = '%s' WHERE id = %d", start.Format("2006-01-02 15:04:05"), j.ID))
	if !withHistory {
		return j, 0
	}
	var samples []models.TelemetrySample
	for at := start.Add(5 * time.Minute); at.Before(time.Now()); at = at.Add(30 * time.Second) {
		samples = append(samples, models.TelemetrySample{NodeID: node.ID, DeviceUUID: uuid, JobID: &j.ID, At: at, Resolution: models.ResolutionRaw,
			UtilPct: 2, UtilMinPct: 2, UtilMaxPct: 2, MemUsedMiB: 3072, MemMinMiB: 3072, MemMaxMiB: 3072, PowerW: 70, PowerMinW: 70, PowerMaxW: 70, Samples: 1,
			Reported: models.ReportedUtil | models.ReportedMemory | models.ReportedPower})
	}
	if err := st.InsertTelemetry(ctx, samples); err != nil {
		t.Fatal(err)
	}
	var metrics []models.JobMetric
	for step := int64(1); step <= 40; step++ {
		at := start.Add(time.Duration(step) * time.Minute)
		metrics = append(metrics, models.JobMetric{Attempt: 1, Step: step * 10, Name: "loss", Value: 4 / float64(step), At: at},
			models.JobMetric{Attempt: 1, Step: step * 10, Name: "samples_per_sec", Value: 500, At: at})
	}
	for _, step := range []int64{200, 400} {
		metrics = append(metrics, models.JobMetric{Attempt: 1, Step: step, Name: telemetry.MetricCheckpoint, Value: float64(step), At: start.Add(time.Duration(step/10) * time.Minute)})
	}
	if err := st.InsertJobMetrics(ctx, j.ID, metrics, nil); err != nil {
		t.Fatal(err)
	}
	return j, len(samples)
}

var dataPoints = regexp.MustCompile(`data-testid="(chart-[a-z0-9-]+)" data-points="(\d+)"`)

// The telemetry panel of a job charts its GPUs (labelled SIMULATED), its loss and
// throughput, lists its checkpoints and the idle-GPU hint with its evidence; an htmx
// request gets the panel alone; a job without history says what to do instead.
func TestJobTelemetryPanel(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			s := newSite(t, st, false)
			ctx := context.Background()
			ada, adaUser := s.member("ada")
			team := &models.Team{Name: "vision"}
			if err := st.CreateTeam(ctx, team); err != nil {
				t.Fatal(err)
			}
			p := &models.Project{TeamID: team.ID, Name: "detect"}
			if err := st.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := s.az.SetProjectRole(ctx, adaUser, p, models.RoleMember); err != nil {
				t.Fatal(err)
			}
			j, n := telemetryJob(t, st, cfg, p, adaUser, true)
			url := fmt.Sprintf("/jobs/%d/telemetry", j.ID)

			res, body := s.send(ada, "GET", url, "", nil)
			if res.StatusCode != 200 || !strings.Contains(body, "<html") {
				t.Fatalf("GET %s = %d", url, res.StatusCode)
			}
			points := map[string]string{}
			for _, m := range dataPoints.FindAllStringSubmatch(body, -1) {
				points[m[1]] = m[2]
			}
			samples := fmt.Sprint(n)
			for id, want := range map[string]string{"chart-gpu-util": samples, "chart-gpu-memory": samples, "chart-gpu-power": samples,
				"chart-metric-loss": "40", "chart-metric-samples-per-sec": "40"} {
				if points[id] != want {
					t.Errorf("%s charts %q points, want %s (charts: %v)", id, points[id], want, points)
				}
			}
			for _, want := range []string{
				`data-testid="simulated"`, "SIMULATED",
				"GPU idle", "stayed below 5% utilisation for 45 min",
				"L4-24GB GPU-sim-", "peak 3 GiB, mean 3 GiB, last 3 GiB",
				"loss by step", "attempt 1: peak 4, mean", "checkpoint at step 200 (attempt 1)",
				`data-testid="checkpoints"`, "<td class=\"num\">400</td>",
				`hx-trigger="every 30s, job-state from:body, fold-open"`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the panel lacks %q", want)
				}
			}
			if strings.Index(body, "<td class=\"num\">400</td>") > strings.Index(body, "<td class=\"num\">200</td>") {
				t.Error("checkpoints are not newest first")
			}

			res, frag := s.send(ada, "GET", url, "", map[string]string{"HX-Request": "true"})
			if res.StatusCode != 200 || strings.Contains(frag, "<html") || !strings.HasPrefix(strings.TrimSpace(frag), `<section id="job-telemetry"`) {
				t.Fatalf("htmx GET = %d %.200s; want the panel alone", res.StatusCode, frag)
			}
			if res.Header.Get("Vary") != "HX-Request" {
				t.Error("the page and its fragment share a URL without Vary: HX-Request")
			}

			bare, _ := telemetryJob(t, st, cfg, p, adaUser, false)
			res, body = s.send(ada, "GET", fmt.Sprintf("/jobs/%d/telemetry", bare.ID), "", map[string]string{"HX-Request": "true"})
			for _, want := range []string{`data-testid="no-hints"`, `data-testid="no-gpu-telemetry"`, `data-testid="no-job-metrics"`, `data-testid="no-checkpoints"`, "GANTRY_JOB_TOKEN"} {
				if res.StatusCode != 200 || !strings.Contains(body, want) {
					t.Errorf("the panel of a job without history lacks %s (%d)", want, res.StatusCode)
				}
			}

			bob, _ := s.member("bob")
			if res, _ := s.send(bob, "GET", url, "", nil); res.StatusCode != 403 {
				t.Errorf("someone outside the project = %d, want 403", res.StatusCode)
			}
		})
	}
}

// The job's page loads its telemetry panel, folded on a phone until opened, whose charts
// draw in a real browser and fit a phone's width.
func TestJobTelemetryInBrowser(t *testing.T) {
	cfg := store.Config{DataDir: t.TempDir()}
	st := storetest.Open(t, cfg)
	s := newSite(t, st, false)
	ctx := context.Background()
	team := &models.Team{Name: "vision"}
	if err := st.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	p := &models.Project{TeamID: team.ID, Name: "detect"}
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	admin, err := st.UserByUsername(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := telemetryJob(t, st, cfg, p, admin, true)
	bctx := browsertest.New(t)
	signInBrowser(t, bctx, s)
	err = chromedp.Do(bctx,
		chromedp.EmulateViewport(390, 844),
		browsertest.Navigate(fmt.Sprintf("%s/jobs/%d", s.srv.URL, j.ID)),
		chromedp.Click("#telemetry-fold summary"), // opened, the job's page loads the panel
		chromedp.WaitVisible("[data-testid=chart-gpu-util] polyline"),
	)
	if err != nil {
		t.Fatal(err)
	}
	width := run(t, bctx, chromedp.Evaluate[float64](`document.querySelector("[data-testid=chart-metric-loss] polyline").getBoundingClientRect().width`))
	overflow := run(t, bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if width < 200 {
		t.Errorf("the loss curve is %.0f px wide on a phone; want it drawn across the plot", width)
	}
	if overflow {
		t.Error("the panel is wider than a phone's screen")
	}
	browsertest.Screenshot(t, bctx, "job-telemetry")
}

// A job that asked for no GPU has no GPU readings to wait for: its panel says so, and
// does not call GPUs it never had SIMULATED because its node simulates its own.
func TestJobTelemetryOfAJobWithoutGPUs(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ctx := context.Background()
	ada := s.user("ada", "default", models.RoleMember)
	f := jobForm(s.csrf(ada, "/jobs/new"))
	f.Set("gpus", "0")
	f.Set("gpu_share", "")
	f.Set("gpu_memory_gib", "")
	res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	node := s.join("gpu-a", "1xA100-80GB")
	s.disp.Tick(ctx)
	leases, err := s.disp.Leases(ctx, node, "", 0)
	if err != nil || len(leases.Allocations) != 1 {
		t.Fatalf("leases = %+v, %v", leases, err)
	}
	exit := 0
	for _, ev := range []agentapi.Report{{AttemptRef: leases.Allocations[0].AttemptRef, Event: agentapi.EventStarted},
		{AttemptRef: leases.Allocations[0].AttemptRef, Event: agentapi.EventExited, ExitCode: &exit}} {
		if err := s.disp.Report(ctx, node, ev); err != nil {
			t.Fatal(err)
		}
	}
	_, body := s.send(ada, "GET", "/jobs/"+m[1]+"/telemetry", "", map[string]string{"HX-Request": "true"})
	if !strings.Contains(body, `data-testid="no-gpu-job">This job asked for no GPU`) || strings.Contains(body, "SIMULATED") || strings.Contains(body, "No GPU readings for this job yet") {
		t.Errorf("the telemetry of a job without GPUs: %s", body)
	}
}
