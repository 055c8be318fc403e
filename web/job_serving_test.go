package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// An inference job's telemetry panel charts the latency and throughput it reported
// against time, a line per metric with its unit, and its other metrics by step; a
// training job that reports the same names gets them by step only; an inference job
// that reported none is told which names Gantry charts.
func TestInferenceJobChartsLatencyAndThroughput(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			s := newSite(t, st, false)
			ctx := context.Background()
			ada, adaUser := s.member("ada")
			team := &models.Team{Name: "serving"}
			if err := st.CreateTeam(ctx, team); err != nil {
				t.Fatal(err)
			}
			p := &models.Project{TeamID: team.ID, Name: "chat"}
			if err := st.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := s.az.SetProjectRole(ctx, adaUser, p, models.RoleMember); err != nil {
				t.Fatal(err)
			}
			report := func(j *models.Job, n int) {
				t.Helper()
				start := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
				var points []models.JobMetric
				for i := range n {
					at := start.Add(time.Duration(i) * time.Minute)
					step := at.Unix()
					points = append(points,
						models.JobMetric{Attempt: 1, Step: step, Name: "latency_p50_ms", Value: 12, At: at},
						models.JobMetric{Attempt: 1, Step: step, Name: "latency_p99_ms", Value: float64(40 + i), At: at},
						models.JobMetric{Attempt: 1, Step: step, Name: "requests_per_sec", Value: 300, At: at},
						models.JobMetric{Attempt: 1, Step: step, Name: "cache_hit_rate", Value: 0.5, At: at})
				}
				if err := st.InsertJobMetrics(ctx, j.ID, points, nil); err != nil {
					t.Fatal(err)
				}
			}
			panel := func(j *models.Job) (map[string]string, string) {
				t.Helper()
				res, body := s.send(ada, "GET", fmt.Sprintf("/jobs/%d/telemetry", j.ID), "", map[string]string{"HX-Request": "true"})
				if res.StatusCode != 200 {
					t.Fatalf("panel of job %d = %d", j.ID, res.StatusCode)
				}
				points := map[string]string{}
				for _, m := range dataPoints.FindAllStringSubmatch(body, -1) {
					points[m[1]] = m[2]
				}
				return points, body
			}

			serve, _ := telemetryJob(t, st, cfg, p, adaUser, false)
			storetest.Exec(t, cfg, fmt.Sprintf("UPDATE jobs SET kind = 'inference' WHERE id = %d", serve.ID))
			report(serve, 30)
			points, body := panel(serve)
			for id, want := range map[string]string{"chart-serving-latency": "60", "chart-serving-throughput": "30", "chart-metric-cache-hit-rate": "30"} {
				if points[id] != want {
					t.Errorf("%s charts %q points; want %s (charts: %v)", id, points[id], want, points)
				}
			}
			for _, id := range []string{"chart-metric-latency-p99-ms", "chart-metric-requests-per-sec"} {
				if _, ok := points[id]; ok {
					t.Errorf("the inference job's %s is charted by step as well", id)
				}
			}
			for _, want := range []string{"Latency the job reported", "latency_p99_ms: peak 69 ms, mean 54.5 ms, last 69 ms", "latency_p50_ms: peak 12 ms",
				"Throughput the job reported", "requests_per_sec: peak 300/s"} {
				if !strings.Contains(body, want) {
					t.Errorf("the inference job's panel lacks %q", want)
				}
			}

			train, _ := telemetryJob(t, st, cfg, p, adaUser, false)
			report(train, 5)
			points, body = panel(train)
			if _, ok := points["chart-serving-latency"]; ok || points["chart-metric-latency-p99-ms"] != "5" || strings.Contains(body, "job-serving-title") {
				t.Errorf("a training job's panel charts %v; want its latency by step and no serving section", points)
			}

			quiet, _ := telemetryJob(t, st, cfg, p, adaUser, false)
			storetest.Exec(t, cfg, fmt.Sprintf("UPDATE jobs SET kind = 'inference' WHERE id = %d", quiet.ID))
			if _, body := panel(quiet); !strings.Contains(body, `data-testid="no-serving-metrics"`) || !strings.Contains(body, "latency_p99_ms") {
				t.Error("an inference job without metrics is not told which names are charted")
			}
		})
	}
}
