package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// A node's history names each GPU's XID errors, the samples where its uncorrected ECC
// count rose, and its stretches at the thermal threshold or above (one event each,
// with the peak and how long), newest first; a GPU at 84 °C with a steady ECC count
// has none.
func TestNodeHistoryFindsHealthEvents(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, cfg store.Config) {
		ctx := context.Background()
		svc := newService(t, s, telemetry.Config{})
		inv := gpu.Inventory{Devices: []gpu.Device{{Index: 0, UUID: "GPU-a", Model: "L4-24GB", MemoryMiB: 24576}, {Index: 1, UUID: "GPU-b", Model: "L4-24GB", MemoryMiB: 24576}}}
		f := newFleet(t, s, cfg, inv)
		t0 := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Second)
		type reading struct {
			temp int
			ecc  int64
			xids []int
		}
		a := []reading{{70, 0, nil}, {86, 0, nil}, {91, 0, []int{79}}, {88, 2, nil}, {60, 2, nil}, {60, 2, []int{13, 31}}, {85, 3, nil}}
		for i, r := range a {
			at := t0.Add(time.Duration(i) * time.Minute)
			devs := []gpu.DeviceSample{
				{Index: 0, UUID: "GPU-a", TemperatureC: ptr(r.temp), ECCUncorrected: ptr(r.ecc), XIDs: r.xids},
				{Index: 1, UUID: "GPU-b", TemperatureC: ptr(84), ECCUncorrected: ptr(int64(1))},
			}
			if _, err := svc.Ingest(ctx, at, telemetry.NodeSample{NodeID: f.node.ID, Sample: gpu.Sample{Time: at, Devices: devs}}); err != nil {
				t.Fatal(err)
			}
		}
		h, err := svc.NodeHistory(ctx, []string{"GPU-a", "GPU-b", "GPU-none"}, t0.Add(-time.Minute), t0.Add(10*time.Minute), time.Now(), 85)
		must(t, err)
		if h.Resolution != models.ResolutionRaw || len(h.GPUs) != 2 || len(h.GPUs[0].Samples) != len(a) {
			t.Fatalf("history = %s, %d GPUs; want raw samples of the 2 GPUs that reported", h.Resolution, len(h.GPUs))
		}
		at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
		want := []telemetry.HealthEvent{
			{At: at(6), DeviceUUID: "GPU-a", Kind: telemetry.EventECC, Detail: "uncorrected ECC errors rose from 2 to 3"},
			{At: at(6), DeviceUUID: "GPU-a", Kind: telemetry.EventThermal, Detail: "85 °C at its hottest, 85 °C or more in one sample"},
			{At: at(5), DeviceUUID: "GPU-a", Kind: telemetry.EventXID, Detail: "2 XID errors, the last XID 31: GPU memory page fault (often an application fault)"},
			{At: at(3), DeviceUUID: "GPU-a", Kind: telemetry.EventECC, Detail: "uncorrected ECC errors rose from 0 to 2"},
			{At: at(2), DeviceUUID: "GPU-a", Kind: telemetry.EventXID, Detail: "XID 79: GPU has fallen off the bus"},
			{At: at(1), DeviceUUID: "GPU-a", Kind: telemetry.EventThermal, Detail: "91 °C at its hottest, 85 °C or more for 2m0s (until " + at(3).Format("15:04:05") + " UTC)"},
			{At: at(0), DeviceUUID: "GPU-b", Kind: telemetry.EventECC, Detail: "uncorrected ECC errors since the driver loaded: 1"},
		}
		if len(h.Events) != len(want) {
			t.Fatalf("events = %+v; want %d", h.Events, len(want))
		}
		for i, w := range want {
			if g := h.Events[i]; !g.At.Equal(w.At) || g.DeviceUUID != w.DeviceUUID || g.Kind != w.Kind || g.Detail != w.Detail {
				t.Errorf("event %d = %+v; want %+v", i, g, w)
			}
		}
		if _, err := svc.NodeHistory(ctx, []string{"GPU-a"}, t0, t0, time.Now(), 85); err == nil {
			t.Error("an empty window was accepted")
		}
	})
}
