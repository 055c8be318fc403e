package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

func TestRunMaintenanceRollsUpUntilCancelled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := newFleet(t, s, store.Config{}, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{})
		at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
		ns := telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: at, Devices: []gpu.DeviceSample{{UUID: "GPU-a", UtilizationPct: ptr(40)}}}}
		if _, err := svc.Ingest(ctx, at, ns); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			svc.RunMaintenance(ctx, func() time.Time { return at.Add(2 * time.Hour) }, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			rows, err := s.Telemetry(context.Background(), store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionHour})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 1 && rows[0].UtilPct == 40 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no hourly roll-up after 30 s: %+v", rows)
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
	})
}

func TestJobsOfDevices(t *testing.T) {
	got, err := telemetry.JobsOfDevices([]models.Allocation{
		{ID: 1, JobID: 7, Devices: `[{"uuid":"GPU-a","milli":1000},{"uuid":"GPU-b","milli":1000}]`},
		{ID: 2, JobID: 8, Devices: `[{"uuid":"GPU-c","milli":500}]`},
		{ID: 3, JobID: 9, Devices: `[{"uuid":"GPU-c","milli":500}]`},
		{ID: 4, JobID: 10, Devices: `[{"uuid":"MIG-d","milli":1000,"mig_profile":"3g.20gb"}]`},
		{ID: 5, JobID: 7, Devices: `[{"uuid":"GPU-e","milli":1000}]`}, // another replica of job 7
		{ID: 6, JobID: 11},
	})
	want := map[string]int64{"GPU-a": 7, "GPU-b": 7, "MIG-d": 10, "GPU-e": 7}
	if err != nil || len(got) != len(want) {
		t.Fatalf("JobsOfDevices = %v, %v; want %v", got, err, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s held by %d, want %d", k, got[k], v)
		}
	}
	if _, err := telemetry.JobsOfDevices([]models.Allocation{{ID: 3, JobID: 4, Devices: "not json"}}); err == nil {
		t.Error("bad devices JSON accepted")
	}
}
