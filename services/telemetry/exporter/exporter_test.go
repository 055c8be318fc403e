package exporter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/exporter"
)

var now = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// scene is a small cluster: node-1 with two A100-80GB and an A100-40GB in MIG mode,
// node-2 lost; a running job on GPU 0; three queued jobs of two teams; a ledger.
type scene struct {
	job      *models.Job
	uuids    []string
	migUUID  string
	lostUUID string
}

func setUp(t *testing.T, s *store.Store, cfg store.Config) scene {
	t.Helper()
	ctx := context.Background()
	u := &models.User{Username: "ada", Email: "ada@example.com"}
	must(t, s.CreateUser(ctx, u))
	projects := map[string]*models.Project{}
	for _, team := range []string{"vision", "nlp"} {
		tm := &models.Team{Name: team}
		must(t, s.CreateTeam(ctx, tm))
		p := &models.Project{TeamID: tm.ID, Name: team + "-project"}
		must(t, s.CreateProject(ctx, p))
		projects[team] = p
	}
	newJob := func(name, team, class string) *models.Job {
		j := &models.Job{Name: name, ProjectID: projects[team].ID, UserID: u.ID, Command: `["true"]`, PriorityClass: class, GPUs: 1}
		must(t, s.CreateJob(ctx, j, "user:ada"))
		return j
	}
	running := newJob("train-resnet", "vision", "research")
	newJob("sweep-1", "vision", "research")
	newJob("serve-1", "vision", "production")
	newJob("bert", "nlp", "research")
	must(t, s.TransitionJob(ctx, running.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}))
	must(t, s.TransitionJob(ctx, running.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}))

	sc := scene{job: running}
	n1 := &models.Node{Name: "node-1", State: models.NodeReady, Labels: "{}", Runtime: "process"}
	devs := []models.GPUDevice{
		{Index: 0, UUID: "GPU-0000", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true},
		{Index: 1, UUID: "GPU-0001", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true},
		{Index: 2, UUID: "GPU-0002", Model: "A100-40GB", MemoryMiB: 40960, MIGEnabled: true, Healthy: true},
	}
	must(t, s.CreateNode(ctx, n1, devs))
	saved, err := s.DevicesOfNode(ctx, n1.ID)
	must(t, err)
	sc.uuids = []string{"GPU-0000", "GPU-0001", "GPU-0002"}
	sc.migUUID = "MIG-0002-a"
	storetest.Exec(t, cfg, fmt.Sprintf("INSERT INTO gpu_slices (device_id, uuid, profile, memory_mib, compute_slices, created_at) VALUES (%d, '%s', '3g.20gb', 19968, 3, CURRENT_TIMESTAMP)", saved[2].ID, sc.migUUID))
	n2 := &models.Node{Name: "node-2", State: models.NodeLost, Labels: "{}", Runtime: "process"}
	must(t, s.CreateNode(ctx, n2, []models.GPUDevice{{Index: 0, UUID: "GPU-1000", Model: "L4-24GB", MemoryMiB: 23034, Healthy: true}}))
	sc.lostUUID = "GPU-1000"
	must(t, s.CreateAllocations(ctx, []models.Allocation{{
		JobID: running.ID, Attempt: 1, NodeID: n1.ID, Devices: `[{"uuid":"GPU-0000","milli":1000},{"uuid":"GPU-0001","milli":500}]`,
		GPUMilli: 1500, State: models.AllocRunning,
	}}))

	tel, err := telemetry.New(s, telemetry.Config{})
	must(t, err)
	ingest := func(node int64, when time.Time, devices []gpu.DeviceSample, jobs map[string]int64) {
		t.Helper()
		_, err := tel.Ingest(ctx, when, telemetry.NodeSample{NodeID: node, Sample: gpu.Sample{Time: when, Devices: devices}, Jobs: jobs})
		must(t, err)
	}
	full := func(uuid string, util int, mem int64, xids ...int) gpu.DeviceSample {
		return gpu.DeviceSample{
			UUID: uuid, UtilizationPct: &util, MemoryUsedMiB: &mem, TemperatureC: ptr(61), PowerW: ptr(312.5),
			SMClockMHz: ptr(1410), NVLinkTxKiBps: ptr(int64(500000)), NVLinkRxKiBps: ptr(int64(500000)),
			ECCUncorrected: ptr(int64(2)), XIDs: xids,
		}
	}
	// Five minutes ago: an XID on GPU 1, and node-2's last words.
	ingest(n1.ID, now.Add(-5*time.Minute), []gpu.DeviceSample{full("GPU-0000", 10, 100), full("GPU-0001", 20, 200, 79)}, nil)
	ingest(n2.ID, now.Add(-5*time.Minute), []gpu.DeviceSample{full("GPU-1000", 99, 999)}, nil)
	// Ten seconds ago: the newest sample of node-1.
	ingest(n1.ID, now.Add(-10*time.Second), []gpu.DeviceSample{
		full("GPU-0000", 87, 40000), full("GPU-0001", 3, 512),
		{UUID: "GPU-0002", MemoryUsedMiB: ptr(int64(7000)), TemperatureC: ptr(40), MIG: []gpu.MIGSample{{UUID: sc.migUUID, MemoryUsedMiB: ptr(int64(6000))}}},
	}, map[string]int64{"GPU-0000": running.ID})

	storetest.Exec(t, cfg, fmt.Sprintf(
		"INSERT INTO ledger_daily (day, team_id, resource, quantity_milli, amount_micros) VALUES ('2026-03-01 00:00:00+00:00', %d, 'gpu', 1000, 1000000), ('2026-03-02 00:00:00+00:00', %d, 'gpu', 500, 500000), ('2026-03-02 00:00:00+00:00', 0, 'storage', 1, 250)",
		projects["vision"].TeamID, projects["vision"].TeamID))
	return sc
}

func TestScrapeExportsDCGMAndGantryMetrics(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			s := storetest.Open(t, cfg)
			sc := setUp(t, s, cfg)
			e := exporter.New(s, func() time.Time { return now }, exporter.Config{})
			e.ObserveCycle(30*time.Millisecond, 2, 1)
			e.ObserveCycle(4*time.Millisecond, 0, 0)
			fams := scrape(t, e)

			job := strconv.FormatInt(sc.job.ID, 10)
			gpu0 := map[string]string{"gpu": "0", "UUID": "GPU-0000", "device": "nvidia0", "modelName": "A100-80GB", "Hostname": "node-1",
				"GPU_I_PROFILE": "", "job": job, "job_name": "train-resnet", "project": "vision-project", "team": "vision"}
			gpu1 := map[string]string{"gpu": "1", "UUID": "GPU-0001", "device": "nvidia1", "modelName": "A100-80GB", "Hostname": "node-1",
				"GPU_I_PROFILE": "", "job": "", "job_name": "", "project": "", "team": ""}
			gpu2 := map[string]string{"gpu": "2", "UUID": "GPU-0002", "device": "nvidia2", "modelName": "A100-40GB", "Hostname": "node-1",
				"GPU_I_PROFILE": "", "job": "", "job_name": "", "project": "", "team": ""}
			mig := map[string]string{"gpu": "2", "UUID": sc.migUUID, "device": "nvidia2", "modelName": "A100-40GB", "Hostname": "node-1",
				"GPU_I_PROFILE": "3g.20gb", "job": "", "job_name": "", "project": "", "team": ""}
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"DCGM_FI_DEV_GPU_UTIL", gpu0, 87},
				{"DCGM_FI_DEV_GPU_UTIL", gpu1, 3},
				{"DCGM_FI_DEV_FB_USED", gpu0, 40000},
				{"DCGM_FI_DEV_FB_FREE", gpu0, 81920 - 40000},
				{"DCGM_FI_DEV_GPU_TEMP", gpu0, 61},
				{"DCGM_FI_DEV_POWER_USAGE", gpu0, 312.5},
				{"DCGM_FI_DEV_SM_CLOCK", gpu0, 1410},
				{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", gpu0, 1024},
				{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gpu0, 2},
				{"DCGM_FI_DEV_XID_ERRORS", gpu0, 0},
				{"DCGM_FI_DEV_XID_ERRORS", gpu1, 79}, // raised 5 minutes ago, still the last one
				{"DCGM_FI_DEV_FB_USED", gpu2, 7000},
				{"DCGM_FI_DEV_GPU_TEMP", gpu2, 40},
				{"DCGM_FI_DEV_FB_USED", mig, 6000},
				{"DCGM_FI_DEV_FB_FREE", mig, 19968 - 6000},
				{"gantry_jobs", map[string]string{"state": "queued"}, 3},
				{"gantry_jobs", map[string]string{"state": "running"}, 1},
				{"gantry_jobs", map[string]string{"state": "failed"}, 0},
				{"gantry_queue_length", map[string]string{"class": "research", "team": "vision"}, 1},
				{"gantry_queue_length", map[string]string{"class": "production", "team": "vision"}, 1},
				{"gantry_queue_length", map[string]string{"class": "research", "team": "nlp"}, 1},
				{"gantry_gpus_total", nil, 3},
				{"gantry_gpus", map[string]string{"state": "allocated"}, 1.5},
				{"gantry_gpus", map[string]string{"state": "idle"}, 1.5},
				{"gantry_gpus", map[string]string{"state": "outside-gantry"}, 0},
				{"gantry_cost_accrued_micros", map[string]string{"team": "vision"}, 1500000},
				{"gantry_cost_accrued_micros", map[string]string{"team": ""}, 250},
				{"gantry_scheduler_placements_total", nil, 2},
				{"gantry_scheduler_preemptions_total", nil, 1},
			} {
				got, ok := value(fams, c.name, c.labels)
				if !ok || got != c.want {
					t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
				}
			}
			// A GPU in MIG mode has no whole-GPU utilisation; a MIG instance has no XID of
			// its own; a lost node's GPU is stale and gone.
			for _, c := range []struct {
				name   string
				labels map[string]string
			}{
				{"DCGM_FI_DEV_GPU_UTIL", gpu2}, {"DCGM_FI_DEV_GPU_UTIL", mig}, {"DCGM_FI_DEV_XID_ERRORS", mig},
				{"DCGM_FI_DEV_GPU_UTIL", map[string]string{"UUID": sc.lostUUID}},
				{"DCGM_FI_DEV_FB_USED", map[string]string{"UUID": sc.lostUUID}},
			} {
				if v, ok := value(fams, c.name, c.labels); ok {
					t.Errorf("%s%v = %v, want no series", c.name, c.labels, v)
				}
			}
			h := fams["gantry_scheduler_cycle_seconds"].GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 0.034 {
				t.Errorf("cycle histogram count %d sum %v, want 2 and 0.034", h.GetSampleCount(), h.GetSampleSum())
			}
			for name, typ := range map[string]dto.MetricType{
				"DCGM_FI_DEV_GPU_UTIL": dto.MetricType_GAUGE, "gantry_scheduler_placements_total": dto.MetricType_COUNTER,
				"gantry_scheduler_cycle_seconds": dto.MetricType_HISTOGRAM, "go_goroutines": dto.MetricType_GAUGE,
			} {
				if f := fams[name]; f == nil || f.GetType() != typ {
					t.Errorf("%s: family %v, want type %v", name, f, typ)
				}
			}
		})
	}
}

// Two exporters in one process register nothing globally, so they never collide.
func TestExportersAreIndependent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		clock := func() time.Time { return now }
		a, b := exporter.New(s, clock, exporter.Config{}), exporter.New(s, clock, exporter.Config{})
		a.ObserveCycle(time.Millisecond, 5, 0)
		if v, _ := value(scrape(t, b), "gantry_scheduler_placements_total", nil); v != 0 {
			t.Errorf("placements seen by the other exporter = %v, want 0", v)
		}
		if v, _ := value(scrape(t, a), "gantry_scheduler_placements_total", nil); v != 5 {
			t.Errorf("placements = %v, want 5", v)
		}
		if v, _ := value(scrape(t, a), "gantry_gpus_total", nil); v != 0 {
			t.Errorf("an empty fleet has %v GPUs, want 0", v)
		}
	})
}

func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// value finds the series of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// The shipped Grafana dashboard queries only series that the exporter exports.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/grafana-gantry.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	cfg := storetest.Backends()[0].Config(t)
	s := storetest.Open(t, cfg)
	setUp(t, s, cfg)
	e := exporter.New(s, func() time.Time { return now }, exporter.Config{})
	e.ObserveCycle(time.Millisecond, 1, 0)
	fams := scrape(t, e)
	name := regexp.MustCompile(`\b(gantry_[a-z_]+|DCGM_FI_[A-Z_]+)`)
	used := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				used++
				if fams[m] == nil && fams[strings.TrimSuffix(m, "_bucket")] == nil {
					t.Errorf("panel %q queries %s, which /metrics does not export", p.Title, m)
				}
			}
		}
	}
	if used < 10 {
		t.Errorf("found %d metric references in the dashboard, want its panels' queries", used)
	}
}
