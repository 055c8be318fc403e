package store_test

import (
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// LatestSamplesOfDevices gives the newest raw sample in the window of each GPU asked
// for, and nothing of a GPU not asked for, of one whose samples are all older, or of
// other resolutions.
func TestLatestSamplesOfDevices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		n := &models.Node{Name: "gpu-1", State: models.NodeReady}
		if err := s.SaveNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		var devs []store.NodeDevice
		for i, uuid := range []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"} {
			devs = append(devs, store.NodeDevice{GPUDevice: models.GPUDevice{Index: i, UUID: uuid, Model: "H100-80GB", MemoryMiB: 81559, Healthy: true}})
		}
		if err := s.ReplaceNodeDevices(ctx, n.ID, devs); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		sample := func(uuid string, at time.Time, res string, util float64) models.TelemetrySample {
			return models.TelemetrySample{NodeID: n.ID, DeviceUUID: uuid, At: at, Resolution: res, UtilPct: util, Samples: 1, Reported: models.ReportedUtil}
		}
		if err := s.InsertTelemetry(ctx, []models.TelemetrySample{
			sample("GPU-a", now.Add(-time.Minute), models.ResolutionRaw, 10),
			sample("GPU-a", now.Add(-10*time.Second), models.ResolutionRaw, 20),
			sample("GPU-a", now, models.ResolutionMinute, 99),
			sample("GPU-b", now.Add(-time.Hour), models.ResolutionRaw, 30),
			sample("GPU-c", now.Add(-5*time.Second), models.ResolutionRaw, 40),
			sample("GPU-d", now.Add(-5*time.Second), models.ResolutionRaw, 50),
		}); err != nil {
			t.Fatal(err)
		}
		got, err := s.LatestSamplesOfDevices(ctx, now.Add(-2*time.Minute), []string{"GPU-a", "GPU-b", "GPU-c", "GPU-x"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].DeviceUUID != "GPU-a" || got[0].UtilPct != 20 || !got[0].At.Equal(now.Add(-10*time.Second)) ||
			got[1].DeviceUUID != "GPU-c" || got[1].UtilPct != 40 || got[1].Reported != models.ReportedUtil {
			t.Fatalf("latest samples = %+v, want GPU-a at 20%% and GPU-c at 40%%", got)
		}
		if got, err := s.LatestSamplesOfDevices(ctx, now.Add(-2*time.Minute), nil); err != nil || len(got) != 0 {
			t.Fatalf("no GPUs asked for: %+v %v", got, err)
		}
	})
}
