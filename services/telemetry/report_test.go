package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// A heartbeat's report is checked whole before its transaction: the sample taken or
// refused whole, each job's CPU point on its own, repeats dropped with one read for
// all jobs, and what is left written by Write inside the caller's transaction.
func TestReportChecksBeforeTheTransactionWrites(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		inv := gpu.Inventory{Devices: []gpu.Device{{Index: 0, UUID: "GPU-a", Model: "L4-24GB", MemoryMiB: 24576}, {Index: 1, UUID: "GPU-b", Model: "L4-24GB", MemoryMiB: 24576}}}
		f := newFleet(t, s, cfg, inv)
		one := runningJob(t, s, f)
		two := &models.Job{Name: "eval", ProjectID: f.project.ID, UserID: one.UserID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
		must(t, s.CreateJob(ctx, two, "user:ada"))
		two = runningJob(t, s, fleet{job: two})
		now := one.StartedAt.Add(10 * time.Minute)
		write := func(r telemetry.Report) {
			t.Helper()
			must(t, s.InTx(ctx, func(tx *store.Store) error { return r.Write(ctx, tx) }))
		}
		sample := func(at time.Time, util int) *telemetry.NodeSample {
			return &telemetry.NodeSample{NodeID: f.node.ID, Jobs: map[string]int64{"GPU-a": one.ID, "GPU-b": two.ID}, Sample: gpu.Sample{Time: at, Devices: []gpu.DeviceSample{
				{Index: 0, UUID: "GPU-a", UtilizationPct: ptr(util)}, {Index: 1, UUID: "GPU-b", UtilizationPct: ptr(util / 2)}}}}
		}
		cpu := func(j *models.Job, step int64, at time.Time, v float64) telemetry.SystemPoint {
			return telemetry.SystemPoint{Job: j, Step: step, At: at, Values: map[string]float64{telemetry.MetricCPUMilli: v}}
		}

		r, err := svc.PrepareReport(ctx, now, sample(now, 80), []telemetry.SystemPoint{cpu(one, 1000, now, 3900), cpu(two, 1000, now, 1200)})
		if err != nil || r.Rows() != 4 {
			t.Fatalf("first report = %d rows, %v; want 2 samples and 2 CPU points", r.Rows(), err)
		}
		write(r)
		// Resent: the CPU points are repeats, the sample is new.
		r, err = svc.PrepareReport(ctx, now, sample(now.Add(5*time.Second), 60), []telemetry.SystemPoint{cpu(one, 1000, now, 3900), cpu(two, 1000, now, 1200)})
		if err != nil || r.Rows() != 2 {
			t.Fatalf("resent report = %d rows, %v; want the 2 samples only", r.Rows(), err)
		}
		write(r)
		// A later step stamped before the newest stored point refuses that job's point only.
		later := now.Add(time.Minute)
		r, err = svc.PrepareReport(ctx, later, nil, []telemetry.SystemPoint{cpu(one, 2000, now.Add(-time.Second), 3800), cpu(two, 2000, later, 1300)})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("job %d: points[0].time", one.ID)) || strings.Contains(err.Error(), fmt.Sprintf("job %d", two.ID)) || r.Rows() != 1 {
			t.Fatalf("report with one job's time going back = %d rows, %v; want job %d refused, job %d kept", r.Rows(), err, one.ID, two.ID)
		}
		write(r)
		// A broken sample is refused whole; the CPU point still goes in.
		r, err = svc.PrepareReport(ctx, later, sample(later, 150), []telemetry.SystemPoint{cpu(two, 3000, later, 1400)})
		if err == nil || !strings.Contains(err.Error(), "sample: devices[0].utilization_pct: is 150") || r.Rows() != 1 {
			t.Fatalf("report with a broken sample = %d rows, %v; want the sample refused and the CPU point kept", r.Rows(), err)
		}
		write(r)

		for _, c := range []struct {
			job  *models.Job
			want []float64
		}{{one, []float64{3900}}, {two, []float64{1200, 1300, 1400}}} {
			got, err := s.JobMetrics(ctx, store.JobMetricFilter{JobID: c.job.ID, Names: []string{telemetry.MetricCPUMilli}})
			must(t, err)
			var vals []float64
			for _, m := range got {
				vals = append(vals, m.Value)
			}
			if !slices.Equal(vals, c.want) {
				t.Errorf("CPU of job %d = %v; want %v", c.job.ID, vals, c.want)
			}
		}
		rows, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionRaw})
		must(t, err)
		if len(rows) != 2 || rows[0].UtilPct != 80 || rows[1].UtilPct != 60 || *rows[0].JobID != one.ID {
			t.Errorf("samples of GPU-a = %+v; want 80%% then 60%% under job %d", rows, one.ID)
		}
	})
}
