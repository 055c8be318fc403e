package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// 100 days of a sample every 12 hours, kept by the default retention: raw for 24 h,
// roll-ups for 90 days, each cut exactly at its boundary.
func TestRetentionKeepsEachResolutionForItsWindow(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{})
		start := at("2026-01-01T00:00:00Z")
		end := start.Add(100 * 24 * time.Hour) // the last sample is at end - 12 h
		count := func(res string) int {
			rows, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: res, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return len(rows)
		}
		var raw []models.TelemetrySample
		for w := start; w.Before(end); w = w.Add(12 * time.Hour) {
			raw = append(raw, rawRow(f.node.ID, "GPU-a", w, 50))
		}
		must(t, s.InsertTelemetry(ctx, raw))
		// Nothing is rolled up yet: Prune keeps every raw sample.
		if p, err := svc.Prune(ctx, end); err != nil || p.Raw != 0 || count(models.ResolutionRaw) != 200 {
			t.Fatalf("prune before any roll-up = %+v, %v, %d raw left; want all 200 kept", p, err, count(models.ResolutionRaw))
		}
		now := end.Add(-12 * time.Hour).Add(24 * time.Hour) // the newest sample is exactly 24 h old
		r, p, err := svc.Maintain(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if r.MinuteRows != 200 || r.HourRows != 200 {
			t.Fatalf("rollup = %+v, want 200 minutes and 200 hours", r)
		}
		// Raw: only the sample at exactly now-24h survives. Roll-ups: the windows at or
		// after now-90d = start+10d12h, the last 89 days of 2 samples and one more.
		keep := 0
		for _, row := range raw {
			if !row.At.Before(now.Add(-90 * 24 * time.Hour)) {
				keep++
			}
		}
		if keep != 179 {
			t.Fatalf("the test expects 179 windows kept, counts %d", keep)
		}
		if p.Raw != 199 || p.Minute != int64(200-keep) || p.Hour != int64(200-keep) {
			t.Errorf("prune = %+v; want 199 raw and %d of each roll-up deleted", p, 200-keep)
		}
		if count(models.ResolutionRaw) != 1 || count(models.ResolutionMinute) != keep || count(models.ResolutionHour) != keep {
			t.Errorf("left: %d raw, %d minutes, %d hours; want 1, %d, %d", count(models.ResolutionRaw), count(models.ResolutionMinute), count(models.ResolutionHour), keep, keep)
		}
		// One second later the last raw sample is past its 24 h.
		if p, err := svc.Prune(ctx, now.Add(time.Second)); err != nil || p.Raw != 1 {
			t.Errorf("prune a second later = %+v, %v; want the last raw sample gone", p, err)
		}
	})
}

// rawRow is a raw sample of one GPU's utilisation, as Ingest stores it.
func rawRow(node int64, uuid string, at time.Time, util float64) models.TelemetrySample {
	return models.TelemetrySample{NodeID: node, DeviceUUID: uuid, At: at, Resolution: models.ResolutionRaw, Samples: 1,
		Reported: models.ReportedUtil, UtilPct: util, UtilMinPct: util, UtilMaxPct: util}
}

// Configured windows are honoured; windows too short to roll up are refused by name.
func TestRetentionConfig(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		f := newFleet(t, s, cfg, gpu.Inventory{})
		svc := newService(t, s, telemetry.Config{RawRetention: time.Hour, MinuteRetention: 3 * time.Hour, HourRetention: 48 * time.Hour})
		start := at("2026-03-02T00:00:00Z")
		var raw []models.TelemetrySample
		for w := start; w.Before(start.Add(4 * time.Hour)); w = w.Add(time.Minute) {
			raw = append(raw, rawRow(f.node.ID, "GPU-a", w, 10))
		}
		must(t, s.InsertTelemetry(ctx, raw))
		_, p, err := svc.Maintain(ctx, start.Add(4*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		// Raw older than 03:00 goes (180 samples); 1-minute rows older than 01:00 (60);
		// the 4 hours of roll-up (the last one incomplete, so 3) all stay.
		if p.Raw != 180 || p.Minute != 60 || p.Hour != 0 {
			t.Errorf("prune = %+v; want 180 raw, 60 minutes, 0 hours", p)
		}
	})
	for _, c := range []struct {
		cfg  telemetry.Config
		want string
	}{
		{telemetry.Config{RawRetention: time.Minute}, "raw retention 1m0s is too short"},
		{telemetry.Config{MinuteRetention: time.Hour}, "minute retention 1h0m0s is too short"},
		{telemetry.Config{Grace: -time.Second}, "grace is -1s: it must be positive"},
	} {
		if _, err := telemetry.New(nil, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
	if d := telemetry.DefaultConfig(); d.RawRetention != 24*time.Hour || d.MinuteRetention != 90*24*time.Hour || d.HourRetention != 90*24*time.Hour {
		t.Errorf("defaults = %+v", d)
	}
}
