package telemetry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Report is what one heartbeat adds to the history: the node's raw GPU samples and
// the system metrics of its jobs, checked, with repeats dropped. PrepareReport reads
// and checks before the heartbeat's transaction; Write only writes, inside it, so a
// heartbeat commits once and holds SQLite's write lock only while it writes.
type Report struct {
	samples []models.TelemetrySample
	metrics []jobRows
}

type jobRows struct {
	job    int64
	points []models.JobMetric
}

// SystemPoint is what Gantry measured of one job at one time: values named under
// SystemPrefix, such as MetricCPUMilli, at a step that grows from one point to the next.
type SystemPoint struct {
	Job    *models.Job
	Step   int64
	At     time.Time
	Values map[string]float64
}

// Rows is how many rows Write stores.
func (r Report) Rows() int {
	n := len(r.samples)
	for _, m := range r.metrics {
		n += len(m.points)
	}
	return n
}

// PrepareReport checks a heartbeat's sample (nil for none) as Ingest does, and its
// jobs' system points (one per job), dropping repeats with one read per metric name
// for all jobs. What it refuses is left out and named in the error, a sample whole
// or not at all, a job's point likewise; the rest is in the Report. A database
// error returns no Report.
func (s *Service) PrepareReport(ctx context.Context, now time.Time, sample *NodeSample, usage []SystemPoint) (Report, error) {
	var r Report
	var refused []error
	if sample != nil {
		rows, err := s.rawRows(now, *sample)
		if err != nil {
			refused = append(refused, fmt.Errorf("sample: %w", err))
		}
		r.samples = rows
	}
	type checked struct {
		job    *models.Job
		points []point
	}
	var jobs []checked
	attempts := map[string]map[int64]int{} // metric name → job → attempt
	for _, u := range usage {
		points, err := s.systemPoints(now, u)
		if err != nil {
			refused = append(refused, fmt.Errorf("job %d: %w", u.Job.ID, err))
			continue
		}
		jobs = append(jobs, checked{u.Job, points})
		for _, p := range points {
			if attempts[p.m.Name] == nil {
				attempts[p.m.Name] = map[int64]int{}
			}
			attempts[p.m.Name][u.Job.ID] = u.Job.Attempt
		}
	}
	last := map[int64]map[string]models.JobMetric{}
	for _, name := range slices.Sorted(maps.Keys(attempts)) {
		got, err := s.store.LastJobMetricOfJobs(ctx, name, attempts[name])
		if err != nil {
			return Report{}, fmt.Errorf("read the newest %s of %d jobs: %w", name, len(attempts[name]), err)
		}
		for id, m := range got {
			if last[id] == nil {
				last[id] = map[string]models.JobMetric{}
			}
			last[id][name] = m
		}
	}
	for _, j := range jobs {
		keep, _, _, err := dedupe(j.job, j.points, last[j.job.ID])
		if err != nil {
			refused = append(refused, fmt.Errorf("job %d: %w", j.job.ID, err))
			continue
		}
		if len(keep) > 0 {
			r.metrics = append(r.metrics, jobRows{job: j.job.ID, points: keep})
		}
	}
	return r, joinRefusals(refused)
}

// systemPoints checks one job's system point.
func (s *Service) systemPoints(now time.Time, u SystemPoint) ([]point, error) {
	for name := range u.Values {
		if !strings.HasPrefix(name, SystemPrefix) {
			return nil, models.Invalid("values."+name, "a system metric's name starts with %q", SystemPrefix)
		}
	}
	at := u.At
	return s.flatten(now, u.Job, MetricBatch{Points: []MetricPoint{{Step: u.Step, Time: &at, Values: u.Values}}}, true)
}

// Write stores the report through st, which should be bound to the heartbeat's
// transaction (store.InTx).
func (r Report) Write(ctx context.Context, st *store.Store) error {
	if err := st.InsertTelemetry(ctx, r.samples); err != nil {
		return err
	}
	for _, m := range r.metrics {
		if err := st.InsertJobMetrics(ctx, m.job, m.points, nil); err != nil {
			return err
		}
	}
	return nil
}

// joinRefusals joins errors on one line, as an agent is told them.
func joinRefusals(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return &refusals{errs: errs, msg: strings.Join(msgs, "; ")}
}

type refusals struct {
	errs []error
	msg  string
}

func (r *refusals) Error() string   { return r.msg }
func (r *refusals) Unwrap() []error { return r.errs }
