package handlers

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
	"github.com/gantry-gpu/gantry/templates"
)

// maxMetricCharts bounds the charts of a job's own metrics: loss and throughput
// first, then the others by name.
const maxMetricCharts = 8

// throughputNames are the metric names charted right after the loss.
var throughputNames = []string{"samples_per_sec", "samples/s", "throughput", "tokens_per_sec", "images_per_sec", "steps_per_sec"}

// JobTelemetry shows a job's telemetry: its GPUs' utilisation, memory and power over
// its life, the metrics and checkpoints it reported, and the bottleneck hints drawn
// from them. An htmx request (a job page embedding the panel, or the panel's own
// refresh) gets the panel alone.
func (h *Handler) JobTelemetry(c *gin.Context) {
	ctx := c.Request.Context()
	job := h.jobPageParam(c)
	if job == nil {
		return
	}
	d, err := h.jobTelemetry(ctx, job, time.Now().UTC())
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Header("Vary", "HX-Request")
	if c.GetHeader("HX-Request") == "true" && c.GetHeader("HX-History-Restore-Request") != "true" {
		render(c, http.StatusOK, templates.JobTelemetry(d))
		return
	}
	render(c, http.StatusOK, templates.JobTelemetryPage(h.page(c, fmt.Sprintf("Telemetry of job %d", job.ID), "jobs"), d))
}

// jobTelemetry reads what the panel shows of job as of now.
func (h *Handler) jobTelemetry(ctx context.Context, job *models.Job, now time.Time) (templates.JobTelemetryData, error) {
	d := templates.JobTelemetryData{JobID: job.ID, JobName: job.Name,
		Live: job.State == models.JobRunning || job.State == models.JobScheduled || job.State == models.JobPreempting}
	charts, err := h.telemetry.JobCharts(ctx, job, time.Time{}, time.Time{}, now, "")
	if err != nil {
		return d, err
	}
	hints, err := h.telemetry.JobHints(ctx, job, now, advice.DefaultThresholds())
	if err != nil {
		return d, err
	}
	for _, hint := range hints {
		d.Hints = append(d.Hints, templates.HintRow{Title: hint.Title, Evidence: hint.Evidence, Device: hint.Device})
	}
	// A job without GPUs is not told its GPUs are simulated: it has none, only its node does.
	d.NoGPU = job.GPUs == 0 && job.GPUMilli == 0 && job.MIGProfile == ""
	if !d.NoGPU {
		if d.Simulated, err = h.simulatedGPUs(ctx, job.ID); err != nil {
			return d, err
		}
	}
	if len(charts.GPUs) > 0 {
		if d.GPUCharts, err = h.gpuCharts(ctx, charts.GPUs, gaugeUtil, gaugeMemory, gaugePower); err != nil {
			return d, err
		}
	}
	d.Resolution = resolutionWords[charts.Resolution]
	metrics := charts.Metrics
	if job.Kind == models.KindInference {
		d.Inference = true
		d.ServingCharts, metrics = servingCharts(metrics)
	}
	d.MetricCharts, d.Checkpoints = metricCharts(metrics)
	return d, nil
}

// servingKind says which serving chart an inference job's metric goes on, and the
// unit its name gives: latency (latency_p99_ms, ttft_latency_s) or throughput
// (requests_per_sec, tokens_per_second, qps); "" for neither.
func servingKind(name string) (chart, unit string) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "latency"):
		switch {
		case strings.HasSuffix(n, "_ms"):
			return "latency", " ms"
		case strings.HasSuffix(n, "_s"), strings.HasSuffix(n, "_sec"), strings.HasSuffix(n, "_seconds"):
			return "latency", " s"
		}
		return "latency", ""
	case strings.HasSuffix(n, "_per_sec"), strings.HasSuffix(n, "_per_second"), strings.HasSuffix(n, "/s"),
		n == "qps", n == "rps", n == "throughput":
		return "throughput", "/s"
	}
	return "", ""
}

// servingCharts draws an inference job's latency and its throughput against time,
// a line per metric (its p50 and p99 together), attempts one after another, and
// returns the points left for the charts by step. A chart whose metrics disagree on
// the unit names none.
func servingCharts(points []models.JobMetric) ([]templates.LineChart, []models.JobMetric) {
	specs := map[string]*templates.LineChartSpec{
		"latency":    {ID: "chart-serving-latency", Title: "Latency the job reported", TimeAxis: true},
		"throughput": {ID: "chart-serving-throughput", Title: "Throughput the job reported", TimeAxis: true},
	}
	units := map[string]map[string]bool{"latency": {}, "throughput": {}}
	lines := map[string]map[string]int{"latency": {}, "throughput": {}} // chart → metric → series
	var rest []models.JobMetric
	for _, p := range points {
		chart, unit := servingKind(p.Name)
		if chart == "" || strings.HasPrefix(p.Name, telemetry.SystemPrefix) {
			rest = append(rest, p)
			continue
		}
		spec := specs[chart]
		units[chart][unit] = true
		i, ok := lines[chart][p.Name]
		if !ok {
			i = len(spec.Series)
			lines[chart][p.Name] = i
			spec.Series = append(spec.Series, templates.LineSeries{Name: p.Name})
		}
		spec.Series[i].Points = append(spec.Series[i].Points, templates.LinePoint{X: float64(p.At.Unix()), Y: p.Value})
	}
	var out []templates.LineChart
	for _, chart := range []string{"latency", "throughput"} {
		spec := specs[chart]
		if len(spec.Series) == 0 {
			continue
		}
		if len(units[chart]) == 1 {
			for u := range units[chart] {
				spec.Unit = u
			}
		}
		for i := range spec.Series {
			pts := spec.Series[i].Points
			sort.SliceStable(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
		}
		out = append(out, templates.NewLineChart(*spec))
	}
	return out, rest
}

// resolutionWords say what a chart of a resolution plots.
var resolutionWords = map[string]string{models.ResolutionRaw: "Raw samples", models.ResolutionMinute: "1-minute averages",
	models.ResolutionHour: "1-hour averages"}

// simulatedGPUs reports whether any node the job ran on simulates its GPUs.
func (h *Handler) simulatedGPUs(ctx context.Context, jobID int64) (bool, error) {
	allocs, err := h.jobs.Allocations(ctx, jobID)
	if err != nil {
		return false, err
	}
	seen := map[int64]bool{}
	for _, a := range allocs {
		if seen[a.NodeID] {
			continue
		}
		seen[a.NodeID] = true
		n, err := h.store.NodeByID(ctx, a.NodeID)
		if err != nil {
			return false, err
		}
		if n.Simulated {
			return true, nil
		}
	}
	return false, nil
}

// gpuGauge is one chart of GPU history: a line per GPU of what value reads from
// the samples that reported bit.
type gpuGauge struct {
	id, title, unit string
	bit             int
	value           func(models.TelemetrySample) float64
}

var (
	gaugeUtil   = gpuGauge{"chart-gpu-util", "GPU utilisation", "%", models.ReportedUtil, func(s models.TelemetrySample) float64 { return s.UtilPct }}
	gaugeMemory = gpuGauge{"chart-gpu-memory", "GPU memory used", " GiB", models.ReportedMemory, func(s models.TelemetrySample) float64 { return float64(s.MemUsedMiB) / 1024 }}
	gaugePower  = gpuGauge{"chart-gpu-power", "GPU power", " W", models.ReportedPower, func(s models.TelemetrySample) float64 { return s.PowerW }}
	gaugeTemp   = gpuGauge{"chart-gpu-temperature", "GPU temperature", " °C", models.ReportedTemperature, func(s models.TelemetrySample) float64 { return s.TempC }}
)

// gpuCharts draws each gauge with a line per GPU; a gauge no GPU reported is left out.
func (h *Handler) gpuCharts(ctx context.Context, gpus []telemetry.DeviceSeries, gauges ...gpuGauge) ([]templates.LineChart, error) {
	uuids := make([]string, len(gpus))
	for i, g := range gpus {
		uuids[i] = g.UUID
	}
	specs, err := h.store.GPUSpecsByUUID(ctx, uuids)
	if err != nil {
		return nil, err
	}
	var out []templates.LineChart
	for _, g := range gauges {
		spec := templates.LineChartSpec{ID: g.id, Title: g.title, Unit: g.unit, TimeAxis: true}
		for _, dev := range gpus {
			s := templates.LineSeries{Name: gpuName(dev.UUID, specs[dev.UUID].Model)}
			for _, smp := range dev.Samples {
				if smp.Reported&g.bit != 0 {
					s.Points = append(s.Points, templates.LinePoint{X: float64(smp.At.Unix()), Y: g.value(smp)})
				}
			}
			if len(s.Points) > 0 {
				spec.Series = append(spec.Series, s)
			}
		}
		if len(spec.Series) > 0 {
			out = append(out, templates.NewLineChart(spec))
		}
	}
	return out, nil
}

// gpuName is a GPU as a legend names it: its model and the start of its UUID.
func gpuName(uuid, model string) string {
	short := uuid
	if len(short) > 12 {
		short = short[:12] + "…"
	}
	if model == "" {
		return short
	}
	return model + " " + short
}

var nonIDChars = regexp.MustCompile(`[^a-z0-9]+`)

// metricCharts draws the job's own metrics against their step, one line per attempt
// (a resumed attempt starts again from its checkpoint's step), checkpoints marked on
// the loss; the job's CPU use, which the agent measures, against time. It returns the
// checkpoints too, newest first.
func metricCharts(points []models.JobMetric) ([]templates.LineChart, []templates.CheckpointRow) {
	byName := map[string][]models.JobMetric{}
	for _, p := range points {
		byName[p.Name] = append(byName[p.Name], p)
	}
	var rows []templates.CheckpointRow
	var marks []templates.ChartMark
	for _, p := range byName[telemetry.MetricCheckpoint] {
		rows = append(rows, templates.CheckpointRow{Attempt: p.Attempt, Step: p.Step, At: p.At.UTC().Format("2006-01-02 15:04:05")})
		marks = append(marks, templates.ChartMark{X: float64(p.Step), Label: fmt.Sprintf("checkpoint at step %d (attempt %d)", p.Step, p.Attempt)})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].At > rows[j].At })
	var names []string
	for name := range byName {
		if !strings.HasPrefix(name, telemetry.SystemPrefix) {
			names = append(names, name)
		}
	}
	rank := func(n string) int {
		switch {
		case n == "loss":
			return 0
		case slices.Contains(throughputNames, n):
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	var out []templates.LineChart
	if cpu := byName[telemetry.MetricCPUMilli]; len(cpu) > 0 {
		s := templates.LineSeries{Name: "CPU in use"}
		for _, p := range cpu {
			s.Points = append(s.Points, templates.LinePoint{X: float64(p.At.Unix()), Y: p.Value / 1000})
		}
		out = append(out, templates.NewLineChart(templates.LineChartSpec{ID: "chart-cpu", Title: "CPU used by the job (cores)", TimeAxis: true, Series: []templates.LineSeries{s}}))
	}
	for _, name := range names[:min(len(names), maxMetricCharts)] {
		spec := templates.LineChartSpec{ID: "chart-metric-" + strings.Trim(nonIDChars.ReplaceAllString(strings.ToLower(name), "-"), "-"), Title: name + " by step"}
		if name == "loss" {
			spec.Marks = marks
		}
		var cur *templates.LineSeries
		attempt := -1
		for _, p := range byName[name] {
			if p.Attempt != attempt {
				attempt = p.Attempt
				spec.Series = append(spec.Series, templates.LineSeries{Name: fmt.Sprintf("attempt %d", attempt)})
				cur = &spec.Series[len(spec.Series)-1]
			}
			cur.Points = append(cur.Points, templates.LinePoint{X: float64(p.Step), Y: p.Value})
		}
		out = append(out, templates.NewLineChart(spec))
	}
	return out, rows
}
