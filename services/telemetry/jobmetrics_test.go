package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// runningJob moves the fleet's job to running and returns it as the store has it.
func runningJob(t *testing.T, s *store.Store, f fleet) *models.Job {
	t.Helper()
	ctx := context.Background()
	must(t, s.TransitionJob(ctx, f.job.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}))
	must(t, s.TransitionJob(ctx, f.job.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}))
	j, err := s.JobByID(ctx, f.job.ID)
	must(t, err)
	return j
}

func TestJobMetricsStoredOnceInOrder(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		job := runningJob(t, s, newFleet(t, s, cfg, gpu.Inventory{}))
		now := job.StartedAt.Add(10 * time.Minute)
		t1, t2 := job.StartedAt.Add(time.Minute), job.StartedAt.Add(2*time.Minute)
		batch := telemetry.MetricBatch{
			Points: []telemetry.MetricPoint{
				{Step: 100, Time: &t1, Values: map[string]float64{"loss": 2.5, "samples_per_sec": 1250}},
				{Step: 200, Time: &t2, Values: map[string]float64{"loss": 1.75, "samples_per_sec": 1300, "lr": 0.001}},
			},
			Checkpoints: []telemetry.CheckpointEvent{{Step: 200, Time: &t2}},
		}
		res, err := svc.RecordJobMetrics(ctx, now, job, batch)
		if err != nil || res.Stored != 6 || res.Dropped != 0 {
			t.Fatalf("result = %+v, %v; want 6 stored", res, err)
		}
		loss, err := s.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Names: []string{"loss"}})
		if err != nil || len(loss) != 2 || loss[0].Value != 2.5 || loss[1].Value != 1.75 || !loss[1].At.Equal(t2) || loss[0].Attempt != 1 {
			t.Fatalf("loss = %+v, %v", loss, err)
		}
		again, err := s.JobByID(ctx, job.ID)
		if err != nil || again.LastCheckpointAt == nil || !again.LastCheckpointAt.Equal(t2) {
			t.Fatalf("last checkpoint = %v, %v; want %s", again.LastCheckpointAt, err, t2)
		}

		// A client that resends after a timeout stores nothing twice.
		res, err = svc.RecordJobMetrics(ctx, now, job, batch)
		if err != nil || res.Stored != 0 || res.Dropped != 6 || res.Reasons[0].Field != "points[0].values.loss" ||
			!strings.Contains(res.Reasons[0].Reason, "step 100 is not after step 200") {
			t.Fatalf("resent batch = %+v, %v; want all 6 dropped as repeats", res, err)
		}
		// A new step stamped before the newest stored point of its metric goes back in time.
		res, err = svc.RecordJobMetrics(ctx, now, job, telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 250, Time: &t1, Values: map[string]float64{"loss": 1.6}}}})
		if !strings.Contains(fmt.Sprint(err), "points[0].time: "+t1.Format(time.RFC3339Nano)+" is before") || res.Stored != 0 {
			t.Fatalf("point before the newest stored = %+v, %v; want refused", res, err)
		}
		// Times: before the start is clipped to the start; within the skew ahead, to now.
		ahead, early := now.Add(time.Minute), job.StartedAt.Add(-time.Hour)
		res, err = svc.RecordJobMetrics(ctx, now, job, telemetry.MetricBatch{Points: []telemetry.MetricPoint{
			{Step: 300, Time: &early, Values: map[string]float64{"grad_norm": 0.9}},
			{Step: 301, Time: &ahead, Values: map[string]float64{"loss": 1.4}},
		}})
		if err != nil || res.Stored != 2 {
			t.Fatalf("clipped times = %+v, %v", res, err)
		}
		grad, _ := s.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Names: []string{"grad_norm"}})
		loss, _ = s.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Names: []string{"loss"}})
		if len(loss) != 3 || !loss[2].At.Equal(now) || len(grad) != 1 || !grad[0].At.Equal(job.StartedAt.UTC()) {
			t.Errorf("clipped points: loss %+v, grad_norm %+v; want at now and at the start", loss[2:], grad)
		}
		// The next attempt resumes from its checkpoint: its steps start lower again.
		job.Attempt = 2
		res, err = svc.RecordJobMetrics(ctx, now, job, telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 201, Values: map[string]float64{"loss": 1.7}}}})
		if err != nil || res.Stored != 1 {
			t.Errorf("first point of attempt 2 = %+v, %v; want stored", res, err)
		}
		// What Gantry measures goes under its own prefix, which jobs cannot use.
		r, err := svc.PrepareReport(ctx, now, nil, []telemetry.SystemPoint{{Job: job, Step: 1, At: now, Values: map[string]float64{telemetry.MetricCPUMilli: 3900}}})
		if err != nil || r.Rows() != 1 {
			t.Fatalf("system metric = %d rows, %v", r.Rows(), err)
		}
		must(t, s.InTx(ctx, func(tx *store.Store) error { return r.Write(ctx, tx) }))
		if r, err := svc.PrepareReport(ctx, now, nil, []telemetry.SystemPoint{{Job: job, Step: 2, At: now, Values: map[string]float64{"loss": 1}}}); err == nil || r.Rows() != 0 {
			t.Errorf("a system metric outside gantry/ = %d rows, %v; want refused", r.Rows(), err)
		}
		cpu, err := s.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Names: []string{telemetry.MetricCPUMilli}})
		if err != nil || len(cpu) != 1 || cpu[0].Value != 3900 || cpu[0].Attempt != 2 {
			t.Errorf("cpu = %+v, %v", cpu, err)
		}
	})
}

func TestJobMetricsRefuseBadBatchesWhole(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		job := runningJob(t, s, newFleet(t, s, cfg, gpu.Inventory{}))
		now := job.StartedAt.Add(10 * time.Minute)
		future := now.Add(time.Hour)
		sooner, later := now.Add(-2*time.Minute), now.Add(-time.Minute)
		many := make([]telemetry.MetricPoint, telemetry.MaxPointsPerBatch+1)
		for i := range many {
			many[i] = telemetry.MetricPoint{Step: int64(i), Values: map[string]float64{"loss": 1}}
		}
		wide := map[string]float64{}
		for i := range telemetry.MaxValuesPerPoint + 1 {
			wide[fmt.Sprintf("m%d", i)] = 1
		}
		good := telemetry.MetricPoint{Step: 1, Values: map[string]float64{"loss": 1}}
		for _, c := range []struct {
			name  string
			batch telemetry.MetricBatch
			want  string
		}{
			{"NaN", telemetry.MetricBatch{Points: []telemetry.MetricPoint{good, {Step: 2, Values: map[string]float64{"loss": math.NaN()}}}}, "points[1].values.loss: is NaN: want a finite number"},
			{"Inf", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 2, Values: map[string]float64{"acc": math.Inf(-1)}}}}, "points[0].values.acc: is -Inf"},
			{"negative step", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: -1, Values: map[string]float64{"loss": 1}}}}, "points[0].step: is -1"},
			{"bad name", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1, Values: map[string]float64{"my loss!": 1}}}}, `points[0].values.my loss!: is not a metric name`},
			{"reserved name", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1, Values: map[string]float64{"gantry/cpu_milli": 1}}}}, "are recorded by Gantry, not by jobs"},
			{"no values", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1}}}, "points[0].values: is empty"},
			{"empty", telemetry.MetricBatch{}, "points: is empty"},
			{"too many points", telemetry.MetricBatch{Points: many}, "points: has 1001 points: at most 1000 per batch"},
			{"too many values", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1, Values: wide}}}, "points[0].values: has 33 metrics: at most 32"},
			{"future", telemetry.MetricBatch{Points: []telemetry.MetricPoint{good, {Step: 2, Time: &future, Values: map[string]float64{"loss": 1}}}}, "points[1].time: " + future.Format(time.RFC3339) + " is 1h0m0s ahead"},
			{"future checkpoint", telemetry.MetricBatch{Checkpoints: []telemetry.CheckpointEvent{{Step: 5, Time: &future}}}, "checkpoints[0].time:"},
			{"negative checkpoint", telemetry.MetricBatch{Checkpoints: []telemetry.CheckpointEvent{{Step: -5}}}, "checkpoints[0].step: is -5"},
			{"steps out of order", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 2, Values: map[string]float64{"loss": 1}}, good}}, "points[1].step: is 1, not after step 2 of loss"},
			{"repeated step", telemetry.MetricBatch{Points: []telemetry.MetricPoint{good, good}}, "points[1].step: is 1, not after step 1"},
			{"time going back", telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1, Time: &later, Values: map[string]float64{"loss": 1}}, {Step: 2, Time: &sooner, Values: map[string]float64{"loss": 1}}}}, "points[1].time: " + sooner.Format(time.RFC3339Nano) + " is before"},
			{"checkpoints out of order", telemetry.MetricBatch{Checkpoints: []telemetry.CheckpointEvent{{Step: 9}, {Step: 8}}}, "checkpoints[1].step: is 8"},
		} {
			res, err := svc.RecordJobMetrics(ctx, now, job, c.batch)
			var fe *models.FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || res.Stored != 0 {
				t.Errorf("%s: %+v, %v; want a FieldError saying %q", c.name, res, err, c.want)
			}
		}
		if got, err := s.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID}); err != nil || len(got) != 0 {
			t.Errorf("after refused batches: %d points, %v; want none", len(got), err)
		}
	})
}

func TestJobMetricsOnlyWhileTheJobRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		f := newFleet(t, s, cfg, gpu.Inventory{})
		batch := telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 1, Values: map[string]float64{"loss": 1}}}}
		queued, err := s.JobByID(ctx, f.job.ID)
		must(t, err)
		if _, err := svc.RecordJobMetrics(ctx, time.Now(), queued, batch); !errors.Is(err, telemetry.ErrJobNotRunning) || !strings.Contains(err.Error(), "is queued") {
			t.Errorf("queued job: %v, want ErrJobNotRunning", err)
		}
		// A job's process may report before the agent's report that it started.
		must(t, s.TransitionJob(ctx, f.job.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}))
		starting, err := s.JobByID(ctx, f.job.ID)
		must(t, err)
		early := telemetry.MetricBatch{Points: []telemetry.MetricPoint{{Step: 0, Values: map[string]float64{"loss": 2}}}}
		if res, err := svc.RecordJobMetrics(ctx, time.Now(), starting, early); err != nil || res.Stored != 1 {
			t.Errorf("a job whose start is not reported yet: %+v, %v; want stored", res, err)
		}
		must(t, s.TransitionJob(ctx, f.job.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}))
		job, err := s.JobByID(ctx, f.job.ID)
		must(t, err)
		must(t, s.TransitionJob(ctx, job.ID, store.Transition{From: models.JobRunning, To: models.JobSucceeded}))
		done, err := s.JobByID(ctx, job.ID)
		must(t, err)
		// The last report of a job that just exited is taken; a later one is not.
		if res, err := svc.RecordJobMetrics(ctx, done.FinishedAt.Add(30*time.Second), done, batch); err != nil || res.Stored != 1 {
			t.Errorf("30 s after exit: %+v, %v; want stored", res, err)
		}
		if _, err := svc.RecordJobMetrics(ctx, done.FinishedAt.Add(time.Hour), done, batch); !errors.Is(err, telemetry.ErrJobNotRunning) {
			t.Errorf("an hour after exit: %v, want ErrJobNotRunning", err)
		}
	})
}
