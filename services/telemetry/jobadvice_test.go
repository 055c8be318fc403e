package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

var a100 = gpu.Inventory{Devices: []gpu.Device{{Index: 0, UUID: "GPU-aaaaaaaa-0000", Model: "A100-80GB", MemoryMiB: 81920}}}

// feed ingests one sample of GPU-aaaaaaaa-0000 per 15 s from start for d, held by job,
// with utilisation util(i) and memory mem.
func feed(t *testing.T, svc *telemetry.Service, nodeID, job int64, start time.Time, d time.Duration, mem int64, util func(i int) int) {
	t.Helper()
	for i := 0; time.Duration(i)*15*time.Second < d; i++ {
		at := start.Add(time.Duration(i) * 15 * time.Second)
		ns := telemetry.NodeSample{NodeID: nodeID, Jobs: map[string]int64{"GPU-aaaaaaaa-0000": job}, Sample: gpu.Sample{Time: at, Devices: []gpu.DeviceSample{
			{UUID: "GPU-aaaaaaaa-0000", UtilizationPct: ptr(util(i)), MemoryUsedMiB: ptr(mem), SMClockMHz: ptr(1410), TemperatureC: ptr(60)},
		}}}
		if _, err := svc.Ingest(context.Background(), at, ns); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJobHintsAndGovernanceSignalsFromStoredTelemetry(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		f := newFleet(t, s, cfg, a100)
		job := runningJob(t, s, f)
		start := job.StartedAt.UTC().Truncate(time.Minute).Add(time.Minute)
		// 20 busy minutes, then 40 idle ones, holding 6 GiB of 80.
		feed(t, svc, f.node.ID, job.ID, start, time.Hour, 6144, func(i int) int {
			if i < 80 {
				return 90
			}
			return 1
		})
		now := start.Add(time.Hour)
		hints, err := svc.JobHints(ctx, job, now, advice.DefaultThresholds())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, h := range hints {
			got[h.Kind] = h.Evidence
		}
		if len(hints) != 2 || !strings.Contains(got[advice.KindGPUIdle], "stayed below 5% utilisation for 40 min") ||
			!strings.Contains(got[advice.KindMemoryOverProvisioned], "peaked at 6.0 GiB of the 80.0 GiB each GPU gives the job (8%)") {
			t.Fatalf("hints = %+v", hints)
		}
		idle, err := svc.JobIdleFor(ctx, job, now, now.Add(-2*time.Hour), advice.DefaultThresholds())
		if err != nil || idle != 40*time.Minute {
			t.Errorf("idle for %s, %v; want 40m", idle, err)
		}
		if idle, _ := svc.JobIdleFor(ctx, job, now, now.Add(-10*time.Minute), advice.DefaultThresholds()); idle != 10*time.Minute {
			t.Errorf("idle for %s looking back 10 min, want 10m", idle)
		}
		// The project-idle rule reads 1-minute roll-ups: 40 of 60 GPU-minutes idle.
		if _, err := svc.Rollup(ctx, now.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		// One grouped query answers for both projects; the one without GPU time is absent.
		byProject, err := svc.ProjectsIdleMinutes(ctx, []int64{f.project.ID, f.project.ID + 1000}, start, now, advice.DefaultThresholds())
		if err != nil || len(byProject) != 1 || byProject[f.project.ID] != (store.GPUMinutes{Total: 60, Idle: 40}) {
			t.Errorf("project idle minutes = %+v, %v; want 40 of 60 for project %d only", byProject, err, f.project.ID)
		}
	})
}

func TestRecommendProfileFromEarlierRuns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		f := newFleet(t, s, cfg, a100)
		img := "ghcr.io/acme/train:1.4"
		submit := func(name, command string) *models.Job {
			j := &models.Job{Name: name, ProjectID: f.project.ID, UserID: f.job.UserID, ImageRef: img, Command: command, PriorityClass: "research", GPUs: 1, GPUModel: "A100-80GB"}
			must(t, s.CreateJob(ctx, j, "user:ada"))
			return j
		}
		// Three earlier runs of the same script peaked at 14 GiB and at most 35%
		// utilisation in one sample, 33.5% over a minute (35, 34, 33, 32); a fourth ran
		// another script and must not count.
		for i, peakUtil := range []int{20, 35, 28} {
			j := submit(fmt.Sprintf("run-%d", i), fmt.Sprintf(`["python","train.py","--seed","%d"]`, i))
			must(t, s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}))
			must(t, s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}))
			start := time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(3-i) * time.Hour)
			feed(t, svc, f.node.ID, j.ID, start, 10*time.Minute, 14336-int64(i)*1000, func(k int) int { return peakUtil - k%5 })
			must(t, s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobRunning, To: models.JobSucceeded}))
		}
		other := submit("eval", `["python","eval.py"]`)
		must(t, s.TransitionJob(ctx, other.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled}))
		if _, err := svc.Rollup(ctx, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		next := submit("run-next", `["python","train.py","--seed","9"]`)
		shapes := []advice.Shape{
			{Model: "A100-80GB", Milli: 1000, MemoryMiB: 81920, PricePerHourMicros: 4_000_000},
			{Model: "A100-80GB", Milli: 500, MemoryMiB: 40960, PricePerHourMicros: 2_000_000},
			{Model: "A100-40GB", MIGProfile: "3g.20gb", MemoryMiB: 19968, PricePerHourMicros: 1_300_000},
		}
		runs, err := svc.SimilarRuns(ctx, next)
		if err != nil || len(runs) != 3 {
			t.Fatalf("similar runs = %+v, %v; want the 3 train.py runs", runs, err)
		}
		rec, ok, err := svc.RecommendProfile(ctx, next, shapes, advice.DefaultRecommendOptions())
		if err != nil || !ok {
			t.Fatalf("recommendation = %+v, %v, %v", rec, ok, err)
		}
		if rec.Evidence != "3 earlier runs peaked at 14.0 GiB and 34% utilisation: a 3g.20gb MIG slice of an A100-40GB would fit; saves 68%" {
			t.Errorf("evidence = %q", rec.Evidence)
		}
	})
}
