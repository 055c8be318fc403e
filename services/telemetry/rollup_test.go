package telemetry_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// A short hand-computed stream: weighted hourly means, min/max, XIDs, job changes
// and gauges that a device does not report.
func TestRollupHandComputedValues(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{})
		type reading struct {
			at    string
			util  int
			mem   int64
			xids  []int
			onJob bool
		}
		for _, r := range []reading{
			{"10:00:00", 10, 1000, nil, true},
			{"10:00:15", 20, 3000, []int{13}, true},
			{"10:00:30", 30, 2000, nil, false},
			{"10:00:45", 40, 2000, []int{31, 43}, false},
			{"10:01:00", 0, 500, nil, false},
			{"10:01:30", 100, 1500, nil, false},
		} {
			when := at("2026-03-02T" + r.at + "Z")
			ns := telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: when, Devices: []gpu.DeviceSample{
				{UUID: "GPU-a", UtilizationPct: ptr(r.util), MemoryUsedMiB: ptr(r.mem), XIDs: r.xids},
				{UUID: "GPU-mig", MemoryUsedMiB: ptr(r.mem / 2)},
			}}}
			if r.onJob {
				ns.Jobs = map[string]int64{"GPU-a": f.job.ID}
			}
			if _, err := svc.Ingest(ctx, when, ns); err != nil {
				t.Fatal(err)
			}
		}
		res, err := svc.Rollup(ctx, at("2026-03-02T11:05:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		// GPU-a: 10:00 on the job, 10:00 off it, 10:01; GPU-mig: 10:00, 10:01. Then one hour each.
		if res.MinuteRows != 5 || res.HourRows != 3 || !res.MinuteWatermark.Equal(at("2026-03-02T11:03:00Z")) || !res.HourWatermark.Equal(at("2026-03-02T11:00:00Z")) {
			t.Fatalf("rollup = %+v", res)
		}
		minutes, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionMinute})
		if err != nil || len(minutes) != 3 {
			t.Fatalf("GPU-a minutes = %+v, %v", minutes, err)
		}
		type want struct {
			job                       bool
			samples                   int
			utilMin, utilAvg, utilMax float64
			memMin, memAvg, memMax    int64
			xids                      int64
			lastXID                   int
		}
		// Telemetry orders by time then device; the job-less row of 10:00 may come
		// first, so match rows by job.
		wants := map[bool]want{
			true:  {true, 2, 10, 15, 20, 1000, 2000, 3000, 1, 13},
			false: {false, 2, 30, 35, 40, 2000, 2000, 2000, 2, 43},
		}
		for _, m := range minutes[:2] {
			w := wants[m.JobID != nil]
			if !m.At.Equal(at("2026-03-02T10:00:00Z")) || m.Samples != w.samples ||
				m.UtilMinPct != w.utilMin || m.UtilPct != w.utilAvg || m.UtilMaxPct != w.utilMax ||
				m.MemMinMiB != w.memMin || m.MemUsedMiB != w.memAvg || m.MemMaxMiB != w.memMax ||
				m.XIDCount != w.xids || m.LastXID != w.lastXID {
				t.Errorf("10:00 minute (on job %v) = %+v, want %+v", m.JobID != nil, m, w)
			}
			if w.job && *m.JobID != f.job.ID {
				t.Errorf("10:00 minute on job %d, want %d", *m.JobID, f.job.ID)
			}
		}
		if m := minutes[2]; !m.At.Equal(at("2026-03-02T10:01:00Z")) || m.Samples != 2 || m.UtilPct != 50 || m.UtilMinPct != 0 || m.UtilMaxPct != 100 || m.MemUsedMiB != 1000 {
			t.Errorf("10:01 minute = %+v, want util 0/50/100 and memory 1000 over 2 samples", m)
		}

		hours, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionHour})
		if err != nil || len(hours) != 2 {
			t.Fatalf("GPU-a hours = %+v, %v; want one on the job, one off it", hours, err)
		}
		for _, h := range hours {
			if h.JobID != nil {
				if h.Samples != 2 || h.UtilPct != 15 || h.XIDCount != 1 {
					t.Errorf("hour on the job = %+v", h)
				}
				continue
			}
			// (35×2 + 50×2) / 4, weighted by samples; memory (2000×2 + 1000×2) / 4.
			if h.Samples != 4 || h.UtilPct != 42.5 || h.UtilMinPct != 0 || h.UtilMaxPct != 100 ||
				h.MemUsedMiB != 1500 || h.MemMinMiB != 500 || h.MemMaxMiB != 2000 || h.XIDCount != 2 || h.LastXID != 43 {
				t.Errorf("hour off the job = %+v", h)
			}
		}
		mig, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-mig", Resolution: models.ResolutionHour})
		if err != nil || len(mig) != 1 {
			t.Fatalf("GPU-mig hours = %+v, %v", mig, err)
		}
		if h := mig[0]; h.Reported != models.ReportedMemory || h.UtilPct != 0 || h.MemUsedMiB != 833 || h.MemMaxMiB != 1500 || h.Samples != 6 {
			t.Errorf("GPU-mig hour = %+v; want memory only, mean round(5000/6)=833, max 1500", h)
		}
	})
}

// expected is a roll-up computed straight from raw samples, the test's oracle.
type expected struct {
	samples                int
	util, mem, temp, power []float64
	clock, nvlink, pcie    []float64
	ecc, xids              int64
	lastXID                int
}

func (e *expected) add(d gpu.DeviceSample) {
	e.samples++
	if d.UtilizationPct != nil {
		e.util = append(e.util, float64(*d.UtilizationPct))
	}
	if d.MemoryUsedMiB != nil {
		e.mem = append(e.mem, float64(*d.MemoryUsedMiB))
	}
	e.temp = append(e.temp, float64(*d.TemperatureC))
	e.power = append(e.power, *d.PowerW)
	e.clock = append(e.clock, float64(*d.SMClockMHz))
	if d.NVLinkTxKiBps != nil {
		e.nvlink = append(e.nvlink, float64(*d.NVLinkTxKiBps+*d.NVLinkRxKiBps)*1024/1e6)
	}
	e.pcie = append(e.pcie, float64(*d.PCIeTxKiBps+*d.PCIeRxKiBps)*1024/1e6)
	e.ecc = max(e.ecc, *d.ECCUncorrected)
	e.xids += int64(len(d.XIDs))
	if n := len(d.XIDs); n > 0 {
		e.lastXID = d.XIDs[n-1]
	}
}

func stats(v []float64) (lo, mean, hi float64) {
	lo, hi = v[0], v[0]
	sum := 0.0
	for _, x := range v {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	return lo, sum / float64(len(v)), hi
}

// The recorded stream, ingested heartbeat by heartbeat while the leader's Maintain
// runs every 10 minutes, rolls up to exactly what the raw samples say. Averages of
// floats may differ in the last bits (summing order); 1-hour memory and clock means
// are means of whole-MiB (whole-MHz) minute means, so within 1 of the raw mean.
func TestRollupOfRecordedStreamMatchesRawSamples(t *testing.T) {
	inv, stream := readStream(t)
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, inv)
		svc := newService(t, s, telemetry.Config{})
		byMinute := map[string]map[time.Time]*expected{}
		byHour := map[string]map[time.Time]*expected{}
		lastMaintain := stream[0].Time
		for _, smp := range stream {
			if _, err := svc.Ingest(ctx, smp.Time, telemetry.NodeSample{NodeID: f.node.ID, Sample: smp}); err != nil {
				t.Fatal(err)
			}
			if smp.Time.Sub(lastMaintain) >= 10*time.Minute {
				if _, _, err := svc.Maintain(ctx, smp.Time); err != nil {
					t.Fatal(err)
				}
				lastMaintain = smp.Time
			}
			for _, d := range smp.Devices {
				if d.MIG != nil {
					continue // MIG instances are checked by the hand-computed test
				}
				for _, idx := range []struct {
					m     map[string]map[time.Time]*expected
					width time.Duration
				}{{byMinute, time.Minute}, {byHour, time.Hour}} {
					if idx.m[d.UUID] == nil {
						idx.m[d.UUID] = map[time.Time]*expected{}
					}
					k := smp.Time.Truncate(idx.width)
					if idx.m[d.UUID][k] == nil {
						idx.m[d.UUID][k] = &expected{}
					}
					idx.m[d.UUID][k].add(d)
				}
			}
		}
		end := stream[len(stream)-1].Time // 12:02:45
		if _, _, err := svc.Maintain(ctx, end.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		for _, d := range inv.Devices[:2] {
			check(t, s, d.UUID, models.ResolutionMinute, byMinute[d.UUID], 125, 0)
			// Hours 09:00 (from 09:58), 10:00 and 11:00; 12:00 is not over.
			check(t, s, d.UUID, models.ResolutionHour, byHour[d.UUID], 3, 1)
		}
	})
}

func check(t *testing.T, s *store.Store, uuid, resolution string, want map[time.Time]*expected, windows int, intSlack float64) {
	t.Helper()
	rows, err := s.Telemetry(context.Background(), store.TelemetryFilter{DeviceUUID: uuid, Resolution: resolution})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != windows {
		t.Fatalf("%s %s: %d rows, want %d", uuid, resolution, len(rows), windows)
	}
	near := func(what string, r models.TelemetrySample, got, want, slack float64) {
		if math.Abs(got-want) > slack+1e-9*math.Abs(want) {
			t.Errorf("%s %s %s %s = %v, want %v", uuid, resolution, r.At.Format("15:04"), what, got, want)
		}
	}
	for _, r := range rows {
		e := want[r.At]
		if e == nil {
			t.Fatalf("%s %s: unexpected window %s", uuid, resolution, r.At)
		}
		if r.Samples != e.samples || r.ECCErrors != e.ecc || r.XIDCount != e.xids || r.LastXID != e.lastXID {
			t.Errorf("%s %s %s: samples %d ecc %d xids %d last %d; want %d %d %d %d", uuid, resolution, r.At.Format("15:04"),
				r.Samples, r.ECCErrors, r.XIDCount, r.LastXID, e.samples, e.ecc, e.xids, e.lastXID)
		}
		lo, mean, hi := stats(e.util)
		near("util min", r, r.UtilMinPct, lo, 0)
		near("util avg", r, r.UtilPct, mean, 0)
		near("util max", r, r.UtilMaxPct, hi, 0)
		lo, mean, hi = stats(e.mem)
		near("mem min", r, float64(r.MemMinMiB), lo, 0)
		near("mem avg", r, float64(r.MemUsedMiB), math.Round(mean), intSlack)
		near("mem max", r, float64(r.MemMaxMiB), hi, 0)
		lo, mean, hi = stats(e.temp)
		near("temp min", r, r.TempMinC, lo, 0)
		near("temp avg", r, r.TempC, mean, 0)
		near("temp max", r, r.TempMaxC, hi, 0)
		lo, mean, hi = stats(e.power)
		near("power min", r, r.PowerMinW, lo, 0)
		near("power avg", r, r.PowerW, mean, 0)
		near("power max", r, r.PowerMaxW, hi, 0)
		lo, mean, hi = stats(e.clock)
		near("clock min", r, float64(r.SMClockMinMHz), lo, 0)
		near("clock avg", r, float64(r.SMClockMHz), math.Round(mean), intSlack)
		near("clock max", r, float64(r.SMClockMaxMHz), hi, 0)
		_, mean, hi = stats(e.nvlink)
		near("nvlink avg", r, r.NVLinkMBps, mean, 0)
		near("nvlink max", r, r.NVLinkMaxMBps, hi, 0)
		_, mean, hi = stats(e.pcie)
		near("pcie avg", r, r.PCIeMBps, mean, 0)
		near("pcie max", r, r.PCIeMaxMBps, hi, 0)
	}
}

// A roll-up waits out the grace period, resumes where it stopped, and never rolls a
// window twice.
func TestRollupWaitsForGraceAndResumes(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{Grace: time.Minute})
		ingest := func(when string, util int) {
			t.Helper()
			w := at("2026-03-02T" + when + "Z")
			ns := telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: w, Devices: []gpu.DeviceSample{{UUID: "GPU-a", UtilizationPct: ptr(util)}}}}
			if _, err := svc.Ingest(ctx, w, ns); err != nil {
				t.Fatal(err)
			}
		}
		minutes := func() []models.TelemetrySample {
			rows, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionMinute})
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		ingest("10:00:10", 10)
		ingest("10:01:10", 20)
		// At 10:02:30 the 10:01 minute is still within its minute of grace.
		if res, err := svc.Rollup(ctx, at("2026-03-02T10:02:30Z")); err != nil || res.MinuteRows != 1 || !res.MinuteWatermark.Equal(at("2026-03-02T10:01:00Z")) {
			t.Fatalf("first rollup = %+v, %v; want 10:00 only", res, err)
		}
		ingest("10:01:50", 40) // late, but within grace
		if res, err := svc.Rollup(ctx, at("2026-03-02T10:02:30Z")); err != nil || res.MinuteRows != 0 {
			t.Fatalf("same rollup again = %+v, %v; want nothing new", res, err)
		}
		if res, err := svc.Rollup(ctx, at("2026-03-02T10:03:00Z")); err != nil || res.MinuteRows != 1 {
			t.Fatalf("rollup after grace = %+v, %v; want 10:01", res, err)
		}
		got := minutes()
		if len(got) != 2 || got[0].UtilPct != 10 || got[1].UtilPct != 30 || got[1].Samples != 2 {
			t.Fatalf("minutes = %+v; want 10:00 at 10%%, 10:01 at 30%% over 2 samples", got)
		}
		ingest("10:01:55", 90) // too late: its minute is rolled up already
		if _, err := svc.Rollup(ctx, at("2026-03-02T10:10:00Z")); err != nil {
			t.Fatal(err)
		}
		if got := minutes(); len(got) != 2 || got[1].UtilPct != 30 {
			t.Errorf("a sample after its minute was rolled up changed the roll-up: %+v", got)
		}
	})
}
