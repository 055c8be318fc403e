package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Limits of one batch of job metrics.
const (
	MaxPointsPerBatch      = 1000
	MaxCheckpointsPerBatch = 100
	MaxValuesPerPoint      = 32
	maxDroppedListed       = 20
)

// Names of the metrics Gantry itself records for a job; a job cannot report them.
const (
	// SystemPrefix starts every name that only Gantry records.
	SystemPrefix = "gantry/"
	// MetricCheckpoint records a checkpoint the job saved; its value is the step.
	MetricCheckpoint = SystemPrefix + "checkpoint"
	// MetricCPUMilli is the CPU the job's processes used, in milli-cores per replica
	// (the unit a job asks for CPU in), as its agent measures it.
	MetricCPUMilli = SystemPrefix + "cpu_milli"
)

var metricName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}$`)

// ErrJobNotRunning: metrics for a job that is not running (nor starting, nor just finished).
var ErrJobNotRunning = errors.New("job is not running")

// MetricPoint is what a job reports at one step: named scalars such as loss and
// samples_per_sec. Step must grow from one point of a metric to the next within an
// attempt (use a request count or seconds for a job without training steps); Time
// defaults to when the server receives the batch.
type MetricPoint struct {
	Step   int64              `json:"step"`
	Time   *time.Time         `json:"time,omitempty"`
	Values map[string]float64 `json:"values"`
}

// CheckpointEvent says the job saved a checkpoint at a step.
type CheckpointEvent struct {
	Step int64      `json:"step"`
	Time *time.Time `json:"time,omitempty"`
}

// MetricBatch is one POST of job metrics.
type MetricBatch struct {
	Points      []MetricPoint     `json:"points"`
	Checkpoints []CheckpointEvent `json:"checkpoints,omitempty"`
}

// MetricResult says what happened to a batch: how many values were stored, and which
// were dropped and why (the first few reasons).
type MetricResult struct {
	Stored  int            `json:"stored"`
	Dropped int            `json:"dropped"`
	Reasons []DroppedValue `json:"reasons,omitempty"`
}

// DroppedValue is one value that was not stored, naming it as the request did.
type DroppedValue struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// RecordJobMetrics stores a batch the job reported for its current attempt. A batch
// with a malformed part (NaN or infinite value, bad name, negative step, too many
// points, a time far in the future, a metric whose steps do not increase or whose
// times go back within the batch, or a new point stamped before the newest stored
// one of its metric) is refused whole with a *models.FieldError. A well-formed value
// whose step is not after the newest stored step of its metric in this attempt is a
// repeat: it is dropped and listed, so a client may safely resend a batch after a
// timeout. A time within the clock skew ahead of now is clipped to now; one before
// the attempt started is clipped to its start.
func (s *Service) RecordJobMetrics(ctx context.Context, now time.Time, job *models.Job, b MetricBatch) (MetricResult, error) {
	if err := s.checkJobReporting(now, job); err != nil {
		return MetricResult{}, err
	}
	points, err := s.flatten(now, job, b, false)
	if err != nil {
		return MetricResult{}, err
	}
	return s.storeJobMetrics(ctx, job, points)
}

func (s *Service) checkJobReporting(now time.Time, job *models.Job) error {
	switch {
	case job.State == models.JobRunning || job.State == models.JobPreempting:
		return nil
	case job.State == models.JobScheduled:
		return nil // its process runs already; the agent's report that it started is on its way
	case models.IsTerminal(job.State) && job.FinishedAt != nil && now.Sub(*job.FinishedAt) <= s.cfg.MaxClockSkew:
		return nil // the last report of a job that just exited
	}
	return fmt.Errorf("%w: job %d is %s; metrics are accepted while it runs", ErrJobNotRunning, job.ID, job.State)
}

// point is one value to store, with the request field that named it.
type point struct {
	field string
	m     models.JobMetric
}

// flatten validates a batch and turns it into one row per value, in request order.
func (s *Service) flatten(now time.Time, job *models.Job, b MetricBatch, system bool) ([]point, error) {
	switch {
	case len(b.Points) == 0 && len(b.Checkpoints) == 0:
		return nil, models.Invalid("points", "is empty: send at least one point or checkpoint")
	case len(b.Points) > MaxPointsPerBatch:
		return nil, models.Invalid("points", "has %d points: at most %d per batch; send several batches", len(b.Points), MaxPointsPerBatch)
	case len(b.Checkpoints) > MaxCheckpointsPerBatch:
		return nil, models.Invalid("checkpoints", "has %d events: at most %d per batch", len(b.Checkpoints), MaxCheckpointsPerBatch)
	}
	start := now
	if job.StartedAt != nil {
		start = job.StartedAt.UTC()
	}
	when := func(field string, t *time.Time) (time.Time, error) {
		if t == nil {
			return now, nil
		}
		at := t.UTC()
		switch {
		case at.After(now.Add(s.cfg.MaxClockSkew)):
			return at, models.Invalid(field, "%s is %s ahead of the server clock (at most %s is accepted): check the clock of the machine the job runs on",
				at.Format(time.RFC3339), at.Sub(now).Round(time.Second), s.cfg.MaxClockSkew)
		case at.After(now):
			return now, nil
		case at.Before(start):
			return start, nil
		}
		return at, nil
	}
	var out []point
	// The previous point of each metric in this batch: steps must increase, times not go back.
	prev := map[string]point{}
	ordered := func(field string, p point) error {
		before, ok := prev[p.m.Name]
		prev[p.m.Name] = p
		switch {
		case !ok:
			return nil
		case p.m.Step <= before.m.Step:
			return models.Invalid(field+".step", "is %d, not after step %d of %s in %s: within a batch each metric's steps must increase",
				p.m.Step, before.m.Step, p.m.Name, before.field)
		case p.m.At.Before(before.m.At):
			return models.Invalid(field+".time", "%s is before %s, the time of %s in %s: times must not go back",
				p.m.At.Format(time.RFC3339Nano), before.m.At.Format(time.RFC3339Nano), p.m.Name, before.field)
		}
		return nil
	}
	for i, p := range b.Points {
		field := fmt.Sprintf("points[%d]", i)
		if p.Step < 0 {
			return nil, models.Invalid(field+".step", "is %d: want 0 or more", p.Step)
		}
		if len(p.Values) == 0 {
			return nil, models.Invalid(field+".values", "is empty: name at least one metric, e.g. {\"loss\": 0.42}")
		}
		if len(p.Values) > MaxValuesPerPoint {
			return nil, models.Invalid(field+".values", "has %d metrics: at most %d per point", len(p.Values), MaxValuesPerPoint)
		}
		at, err := when(field+".time", p.Time)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(p.Values))
		for name := range p.Values {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			v := p.Values[name]
			vfield := field + ".values." + name
			switch {
			case !metricName.MatchString(name):
				return nil, models.Invalid(vfield, "is not a metric name: use up to 64 letters, digits and _ . : / -, starting with a letter or _")
			case strings.HasPrefix(name, SystemPrefix) != system:
				return nil, models.Invalid(vfield, "names under %q are recorded by Gantry, not by jobs", SystemPrefix)
			case math.IsNaN(v) || math.IsInf(v, 0):
				return nil, models.Invalid(vfield, "is %v: want a finite number", v)
			}
			pt := point{field: vfield, m: models.JobMetric{Attempt: job.Attempt, Step: p.Step, Name: name, Value: v, At: at}}
			if err := ordered(field, pt); err != nil {
				return nil, err
			}
			out = append(out, pt)
		}
	}
	for i, c := range b.Checkpoints {
		field := fmt.Sprintf("checkpoints[%d]", i)
		if c.Step < 0 {
			return nil, models.Invalid(field+".step", "is %d: want 0 or more", c.Step)
		}
		at, err := when(field+".time", c.Time)
		if err != nil {
			return nil, err
		}
		pt := point{field: field, m: models.JobMetric{Attempt: job.Attempt, Step: c.Step, Name: MetricCheckpoint, Value: float64(c.Step), At: at}}
		if err := ordered(field, pt); err != nil {
			return nil, err
		}
		out = append(out, pt)
	}
	return out, nil
}

// storeJobMetrics drops repeats and out-of-order values, then stores the rest.
func (s *Service) storeJobMetrics(ctx context.Context, job *models.Job, points []point) (MetricResult, error) {
	var names []string
	for _, p := range points {
		if !slices.Contains(names, p.m.Name) {
			names = append(names, p.m.Name)
		}
	}
	last, err := s.store.LastJobMetrics(ctx, job.ID, job.Attempt, names)
	if err != nil {
		return MetricResult{}, fmt.Errorf("record metrics of job %d: %w", job.ID, err)
	}
	keep, res, checkpointAt, err := dedupe(job, points, last)
	if err != nil || len(keep) == 0 {
		return res, err
	}
	if err := s.store.InsertJobMetrics(ctx, job.ID, keep, checkpointAt); err != nil {
		return MetricResult{}, fmt.Errorf("record metrics of job %d: %w", job.ID, err)
	}
	res.Stored = len(keep)
	return res, nil
}

// dedupe drops the points whose step is not after the newest stored step of their
// metric (last, by name): repeats, counted and listed in res. A point stamped before
// that newest one is refused. checkpointAt is the newest checkpoint kept.
func dedupe(job *models.Job, points []point, last map[string]models.JobMetric) (keep []models.JobMetric, res MetricResult, checkpointAt *time.Time, err error) {
	for _, p := range points {
		prev, ok := last[p.m.Name]
		if ok && p.m.Step <= prev.Step {
			res.Dropped++
			if len(res.Reasons) < maxDroppedListed {
				res.Reasons = append(res.Reasons, DroppedValue{Field: p.field,
					Reason: fmt.Sprintf("step %d is not after step %d, the newest %s of attempt %d: a repeat", p.m.Step, prev.Step, p.m.Name, job.Attempt)})
			}
			continue
		}
		if ok && p.m.At.Before(prev.At) {
			field := strings.TrimSuffix(p.field, ".values."+p.m.Name)
			return nil, MetricResult{}, nil, models.Invalid(field+".time", "%s is before %s, when step %d of %s was stored: times must not go back",
				p.m.At.Format(time.RFC3339Nano), prev.At.Format(time.RFC3339Nano), prev.Step, p.m.Name)
		}
		keep = append(keep, p.m)
		if p.m.Name == MetricCheckpoint && (checkpointAt == nil || p.m.At.After(*checkpointAt)) {
			at := p.m.At
			checkpointAt = &at
		}
	}
	return keep, res, checkpointAt, nil
}
