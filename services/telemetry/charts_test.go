package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

func TestJobChartsPickTheResolutionOfTheSpan(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		f := newFleet(t, s, cfg, a100)
		job := runningJob(t, s, f)
		start := job.StartedAt.UTC().Truncate(time.Minute).Add(time.Minute)
		feed(t, svc, f.node.ID, job.ID, start, 10*time.Minute, 2048, func(i int) int { return i % 100 })
		now := start.Add(10 * time.Minute)
		_, err := svc.RecordJobMetrics(ctx, now, job, telemetry.MetricBatch{
			Points:      []telemetry.MetricPoint{{Step: 10, Values: map[string]float64{"loss": 0.5}}},
			Checkpoints: []telemetry.CheckpointEvent{{Step: 10}},
		})
		must(t, err)
		c, err := svc.JobCharts(ctx, job, time.Time{}, time.Time{}, now, "")
		if err != nil {
			t.Fatal(err)
		}
		if c.Resolution != models.ResolutionRaw || len(c.GPUs) != 1 || len(c.GPUs[0].Samples) != 40 || len(c.Metrics) != 2 {
			t.Fatalf("charts = %s, %d GPUs, %d metrics", c.Resolution, len(c.GPUs), len(c.Metrics))
		}
		if _, err := svc.Rollup(ctx, now.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		c, err = svc.JobCharts(ctx, job, time.Time{}, time.Time{}, now, models.ResolutionMinute)
		if err != nil || len(c.GPUs[0].Samples) != 10 || c.GPUs[0].Samples[0].Samples != 4 {
			t.Fatalf("minute charts = %+v, %v", c, err)
		}
		// Long ago, a week's span is read from hourly roll-ups.
		if res := svc.ResolutionFor(now.Add(-10*24*time.Hour), now.Add(-3*24*time.Hour), now); res != models.ResolutionHour {
			t.Errorf("a week long ago at %s, want 1h", res)
		}
		var fe *models.FieldError
		if _, err := svc.JobCharts(ctx, job, now, now.Add(-time.Hour), now, ""); !errors.As(err, &fe) || fe.Field != "from" {
			t.Errorf("from after to: %v", err)
		}
		if _, err := svc.JobCharts(ctx, job, time.Time{}, time.Time{}, now, "5m"); !errors.As(err, &fe) || fe.Field != "resolution" {
			t.Errorf("resolution 5m: %v", err)
		}
	})
}
