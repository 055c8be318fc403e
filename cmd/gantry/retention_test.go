package main

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// serve keeps GPU history as its retention flags say: with raw samples kept 20 minutes
// and roll-ups 2 days, its first maintenance pass rolls up the raw samples, then
// deletes those older than 20 minutes and keeps the recent one, and deletes roll-ups
// older than 2 days.
func TestServeEnforcesTheTelemetryRetentionFlags(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ctx := context.Background()
			n := &models.Node{Name: "gpu-1", State: models.NodeReady, Labels: "{}", Runtime: "process"}
			if err := st.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Minute)
			row := func(res string, at time.Time, util float64) models.TelemetrySample {
				return models.TelemetrySample{NodeID: n.ID, DeviceUUID: "GPU-a", At: at, Resolution: res, Samples: 1, Reported: models.ReportedUtil,
					UtilPct: util, UtilMinPct: util, UtilMaxPct: util}
			}
			old := now.Add(-3 * 24 * time.Hour)
			rows := []models.TelemetrySample{
				row(models.ResolutionRaw, now.Add(-40*time.Minute), 10), row(models.ResolutionRaw, now.Add(-30*time.Minute), 20),
				row(models.ResolutionRaw, now.Add(-5*time.Minute), 30),
				row(models.ResolutionMinute, old, 40), row(models.ResolutionHour, old.Truncate(time.Hour), 40),
			}
			if err := st.InsertTelemetry(ctx, rows); err != nil {
				t.Fatal(err)
			}
			_, stop := serve(t, nil, append([]string{"--data-dir", t.TempDir(), "--no-local-agent", "--bcrypt-cost", "4",
				"--telemetry-raw-retention", "20m", "--telemetry-rollup-retention", "2d"}, dbArgs(cfg)...)...)
			history := func(res string) []models.TelemetrySample {
				t.Helper()
				got, err := st.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: res, From: old.Add(-time.Hour), To: now.Add(time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			// A pass prunes raw samples, then 1-minute and then 1-hour roll-ups: wait for
			// the last, not the first, before stopping serve.
			pruned := func() bool {
				for _, h := range history(models.ResolutionHour) {
					if h.At.Before(now.Add(-2 * 24 * time.Hour)) {
						return false
					}
				}
				return len(history(models.ResolutionRaw)) == 1
			}
			deadline := time.Now().Add(30 * time.Second)
			for !pruned() && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if code, log := stop(); code != 0 {
				t.Fatalf("serve exited %d: %s", code, log)
			}
			if raw := history(models.ResolutionRaw); len(raw) != 1 || !raw[0].At.Equal(now.Add(-5*time.Minute)) {
				t.Fatalf("raw samples left = %+v; want only the one of 5 minutes ago", raw)
			}
			minutes := history(models.ResolutionMinute)
			var rolled []float64
			for _, m := range minutes {
				if m.At.Before(now.Add(-2 * 24 * time.Hour)) {
					t.Errorf("a 1-minute roll-up of %s outlived the 2-day retention", m.At)
				}
				rolled = append(rolled, m.UtilPct)
			}
			if len(rolled) != 3 || rolled[0] != 10 || rolled[1] != 20 || rolled[2] != 30 {
				t.Errorf("1-minute roll-ups = %v; want each raw sample rolled up, the pruned ones too (10%%, 20%%, 30%%)", rolled)
			}
			for _, h := range history(models.ResolutionHour) {
				if h.At.Before(now.Add(-2 * 24 * time.Hour)) {
					t.Errorf("a 1-hour roll-up of %s outlived the 2-day retention", h.At)
				}
			}
		})
	}
}
