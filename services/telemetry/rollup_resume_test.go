package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A roll-up window is written in several transactions. A pass that stopped after
// the first leaves rows at the mark: pruning keeps that window's raw samples, and
// the next pass deletes what was written and rolls the window up again, once.
// History rolled up before marks existed (none set) counts as whole.
func TestRollupResumesAWindowWrittenInPart(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) { testRollupResume(t, b.Config(t)) })
	}
}

func testRollupResume(t *testing.T, cfg store.Config) {
	t.Helper()
	s := storetest.Open(t, cfg)
	ctx := context.Background()
	n := &models.Node{Name: "node-1", State: "ready", Labels: "{}", Runtime: "process"}
	if err := s.CreateNode(ctx, n, nil); err != nil {
		t.Fatal(err)
	}
	svc, err := New(s, Config{RawRetention: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	m1 := m0.Add(time.Minute)
	for k, when := range []time.Time{m0, m0.Add(30 * time.Second), m1, m1.Add(30 * time.Second)} {
		var devs []gpu.DeviceSample
		for d, uuid := range []string{"GPU-a", "GPU-b", "GPU-c"} {
			util := 10*k + d
			devs = append(devs, gpu.DeviceSample{UUID: uuid, UtilizationPct: &util})
		}
		if _, err := svc.Ingest(ctx, when, NodeSample{NodeID: n.ID, Sample: gpu.Sample{Time: when, Devices: devs}}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := svc.Rollup(ctx, m1.Add(svc.cfg.Grace)); err != nil || res.MinuteRows != 3 {
		t.Fatalf("rolling up 10:00 = %+v, %v; want 3 rows", res, err)
	}
	// A pass stopped after the first transaction of 10:01: a wrong row, the mark at its start.
	partial := models.TelemetrySample{NodeID: n.ID, DeviceUUID: "GPU-a", At: m1, Resolution: models.ResolutionMinute, Samples: 1, Reported: models.ReportedUtil, UtilPct: 99, UtilMinPct: 99, UtilMaxPct: 99}
	err = s.InTx(ctx, func(tx *store.Store) error {
		if err := tx.InsertTelemetry(ctx, []models.TelemetrySample{partial}); err != nil {
			return err
		}
		return tx.PutSetting(ctx, rolledKey(minuteLevel), m1.Format(time.RFC3339))
	})
	if err != nil {
		t.Fatal(err)
	}
	now := m0.Add(9 * time.Minute)
	p, err := svc.Prune(ctx, now)
	if err != nil || p.Raw != 6 {
		t.Fatalf("prune = %+v, %v; want the 6 raw samples of 10:00 deleted and those of 10:01 kept", p, err)
	}
	res, err := svc.Rollup(ctx, now)
	if err != nil || res.MinuteRows != 3 {
		t.Fatalf("rolling up 10:01 again = %+v, %v; want 3 rows", res, err)
	}
	rows, err := s.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: models.ResolutionMinute})
	if err != nil || len(rows) != 2 || !rows[1].At.Equal(m1) || rows[1].UtilPct != 25 || rows[1].Samples != 2 {
		t.Fatalf("GPU-a minutes = %+v, %v; want 10:00 and 10:01, the latter the mean of 20%% and 30%% over 2 samples", rows, err)
	}
	if mark, _, _ := s.Setting(ctx, rolledKey(minuteLevel)); mark != m1.Add(time.Minute).Format(time.RFC3339) {
		t.Errorf("mark = %q; want the end of 10:01", mark)
	}
	// Without a mark the newest window counts as whole: nothing is rolled up twice.
	storetest.Exec(t, cfg, "DELETE FROM settings WHERE key = '"+rolledKey(minuteLevel)+"'")
	if res, err := svc.Rollup(ctx, now); err != nil || res.MinuteRows != 0 {
		t.Fatalf("rollup without a mark = %+v, %v; want nothing written", res, err)
	}
}
