package telemetry_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

func TestIngestStoresOneRowPerDeviceAndMIGInstance(t *testing.T) {
	inv, stream := readStream(t)
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, inv)
		svc := newService(t, s, telemetry.Config{})
		smp := stream[100] // carries XID 13 on GPU 0
		n, err := svc.Ingest(ctx, smp.Time, telemetry.NodeSample{
			NodeID: f.node.ID, Sample: smp, Jobs: map[string]int64{inv.Devices[0].UUID: f.job.ID},
		})
		if err != nil {
			t.Fatal(err)
		}
		// 2 whole GPUs, the MIG-mode GPU itself, and its 2 MIG instances.
		if n != 5 {
			t.Fatalf("stored %d rows, want 5", n)
		}
		rows, err := s.Telemetry(ctx, store.TelemetryFilter{JobID: f.job.ID, Resolution: models.ResolutionRaw})
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows of the job = %+v, %v; want GPU 0's", rows, err)
		}
		d, r := smp.Devices[0], rows[0]
		if r.DeviceUUID != d.UUID || !r.At.Equal(smp.Time) || r.NodeID != f.node.ID || r.Samples != 1 {
			t.Errorf("row = %+v", r)
		}
		if r.UtilPct != float64(*d.UtilizationPct) || r.UtilMinPct != r.UtilPct || r.UtilMaxPct != r.UtilPct {
			t.Errorf("util = %v/%v/%v, want %d thrice", r.UtilMinPct, r.UtilPct, r.UtilMaxPct, *d.UtilizationPct)
		}
		if r.MemUsedMiB != *d.MemoryUsedMiB || r.PowerW != *d.PowerW || r.TempMaxC != float64(*d.TemperatureC) || r.SMClockMHz != int64(*d.SMClockMHz) {
			t.Errorf("gauges = %+v, want those of %+v", r, d)
		}
		if want := float64(*d.NVLinkTxKiBps+*d.NVLinkRxKiBps) * 1024 / 1e6; math.Abs(r.NVLinkMBps-want) > 1e-9 {
			t.Errorf("nvlink = %v MB/s, want %v", r.NVLinkMBps, want)
		}
		if r.XIDCount != 1 || r.LastXID != 13 {
			t.Errorf("xid count %d last %d, want 1 and 13", r.XIDCount, r.LastXID)
		}
		all := models.ReportedUtil | models.ReportedMemory | models.ReportedTemperature | models.ReportedPower |
			models.ReportedSMClock | models.ReportedNVLink | models.ReportedPCIe | models.ReportedECC
		if r.Reported != all {
			t.Errorf("reported = %b, want %b", r.Reported, all)
		}

		migGPU, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: inv.Devices[2].UUID, Resolution: models.ResolutionRaw})
		if err != nil || len(migGPU) != 1 {
			t.Fatalf("MIG-mode GPU rows = %+v, %v", migGPU, err)
		}
		if migGPU[0].Reported&models.ReportedUtil != 0 || migGPU[0].Reported&models.ReportedNVLink != 0 || migGPU[0].JobID != nil {
			t.Errorf("a MIG-mode GPU reports no utilisation nor NVLink, and holds no job: %+v", migGPU[0])
		}
		mig, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: inv.Devices[2].MIGInstances[0].UUID, Resolution: models.ResolutionRaw})
		if err != nil || len(mig) != 1 || mig[0].Reported != models.ReportedMemory || mig[0].MemUsedMiB != *smp.Devices[2].MIG[0].MemoryUsedMiB {
			t.Errorf("MIG instance rows = %+v, %v; want its memory alone", mig, err)
		}
	})
}

func TestIngestRefusesBadInputAndStoresNothing(t *testing.T) {
	now := at("2026-03-02T10:00:00Z")
	good := func() gpu.DeviceSample {
		return gpu.DeviceSample{UUID: "GPU-a", UtilizationPct: ptr(50), MemoryUsedMiB: ptr(int64(1000)), PowerW: ptr(200.0)}
	}
	cases := []struct {
		name   string
		edit   func(ns *telemetry.NodeSample)
		reason string
	}{
		{"no node", func(ns *telemetry.NodeSample) { ns.NodeID = 0 }, "node_id: is 0"},
		{"no time", func(ns *telemetry.NodeSample) { ns.Sample.Time = time.Time{} }, "time: is missing"},
		{"future", func(ns *telemetry.NodeSample) { ns.Sample.Time = now.Add(10 * time.Minute) }, "10m0s ahead of the server clock"},
		{"too old", func(ns *telemetry.NodeSample) { ns.Sample.Time = now.Add(-25 * time.Hour) }, "older than the raw retention of 24h0m0s"},
		{"util over 100", func(ns *telemetry.NodeSample) { ns.Sample.Devices[0].UtilizationPct = ptr(140) }, "devices[0].utilization_pct: is 140: want 0..100"},
		{"NaN power", func(ns *telemetry.NodeSample) { ns.Sample.Devices[1].PowerW = ptr(math.NaN()) }, "devices[1].power_w: is NaN"},
		{"Inf power", func(ns *telemetry.NodeSample) { ns.Sample.Devices[0].PowerW = ptr(math.Inf(1)) }, "devices[0].power_w: is +Inf"},
		{"negative memory", func(ns *telemetry.NodeSample) { ns.Sample.Devices[0].MemoryUsedMiB = ptr(int64(-1)) }, "devices[0].memory_used_mib: is -1"},
		{"negative pcie", func(ns *telemetry.NodeSample) { ns.Sample.Devices[0].PCIeRxKiBps = ptr(int64(-5)) }, "devices[0].pcie_rx_kibps: is -5"},
		{"bad xid", func(ns *telemetry.NodeSample) { ns.Sample.Devices[0].XIDs = []int{0} }, "devices[0].xids: is [0]"},
		{"no uuid", func(ns *telemetry.NodeSample) { ns.Sample.Devices[1].UUID = "" }, "devices[1].uuid: is empty"},
		{"twice", func(ns *telemetry.NodeSample) { ns.Sample.Devices[1].UUID = "GPU-a" }, "devices[1].uuid: GPU-a appears twice"},
		{"bad job", func(ns *telemetry.NodeSample) { ns.Jobs = map[string]int64{"GPU-a": -3} }, "jobs[GPU-a]: is -3"},
		{"negative MIG memory", func(ns *telemetry.NodeSample) {
			ns.Sample.Devices[0].MIG = []gpu.MIGSample{{UUID: "MIG-x", MemoryUsedMiB: ptr(int64(-1))}}
		}, "devices[0].mig[0].memory_used_mib: is -1"},
	}
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{})
		for _, c := range cases {
			second := good()
			second.UUID = "GPU-b"
			ns := telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: now, Devices: []gpu.DeviceSample{good(), second}}}
			c.edit(&ns)
			n, err := svc.Ingest(ctx, now, ns)
			var fe *models.FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.reason) || n != 0 {
				t.Errorf("%s: stored %d, error %v; want a FieldError saying %q", c.name, n, err, c.reason)
			}
		}
		for _, uuid := range []string{"GPU-a", "GPU-b"} {
			rows, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: uuid, Resolution: models.ResolutionRaw})
			if err != nil || len(rows) != 0 {
				t.Errorf("%s after refused batches: %d rows, %v; want none", uuid, len(rows), err)
			}
		}
		// Within the allowed skew, a sample is taken as stamped.
		ok := telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: now.Add(time.Minute), Devices: []gpu.DeviceSample{good()}}}
		if n, err := svc.Ingest(ctx, now, ok); err != nil || n != 1 {
			t.Fatalf("a sample 1 min ahead: %d, %v; want it stored", n, err)
		}
	})
}
