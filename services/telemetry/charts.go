package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// JobCharts is what a job's charts show: the history of each GPU it held and the
// metrics it reported (checkpoints among them, as MetricCheckpoint), from..to.
type JobCharts struct {
	From, To   time.Time
	Resolution string
	GPUs       []DeviceSeries
	Metrics    []models.JobMetric
}

// DeviceSeries is one GPU's (or MIG instance's) samples, oldest first.
type DeviceSeries struct {
	UUID    string
	Samples []models.TelemetrySample
}

// JobCharts reads a job's history from..to (zero: the job's whole run as of now) at
// the resolution that suits the span (see ResolutionFor), or at resolution when given.
func (s *Service) JobCharts(ctx context.Context, job *models.Job, from, to, now time.Time, resolution string) (JobCharts, error) {
	start, end := jobSpan(job, now)
	if from.IsZero() {
		from = start
	}
	if to.IsZero() {
		to = end.Add(time.Minute)
	}
	if !from.Before(to) {
		return JobCharts{}, models.Invalid("from", "%s is not before to (%s)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	switch resolution {
	case "":
		resolution = s.ResolutionFor(from, to, now)
	case models.ResolutionRaw, models.ResolutionMinute, models.ResolutionHour:
	default:
		return JobCharts{}, models.Invalid("resolution", "%q: want raw, 1m or 1h", resolution)
	}
	rows, err := s.store.Telemetry(ctx, store.TelemetryFilter{JobID: job.ID, Resolution: resolution, From: from, To: to, Limit: maxHistoryRows})
	if err != nil {
		return JobCharts{}, fmt.Errorf("charts of job %d: %w", job.ID, err)
	}
	out := JobCharts{From: from.UTC(), To: to.UTC(), Resolution: resolution}
	index := map[string]int{}
	for _, r := range rows {
		i, ok := index[r.DeviceUUID]
		if !ok {
			i = len(out.GPUs)
			index[r.DeviceUUID] = i
			out.GPUs = append(out.GPUs, DeviceSeries{UUID: r.DeviceUUID})
		}
		out.GPUs[i].Samples = append(out.GPUs[i].Samples, r)
	}
	if out.Metrics, err = s.store.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Limit: maxHistoryRows}); err != nil {
		return JobCharts{}, fmt.Errorf("charts of job %d: %w", job.ID, err)
	}
	return out, nil
}
