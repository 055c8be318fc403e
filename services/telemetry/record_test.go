package telemetry_test

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/gpu"
)

var record = flag.Bool("record", false, "record "+streamFile+" from the simulated GPU source")

// TestRecordStream writes the recorded stream the roll-up tests replay. It runs only
// with -record: the file is checked in so that the tests do not move when the
// simulation changes.
func TestRecordStream(t *testing.T) {
	if !*record {
		t.Skip("run with -record to regenerate " + streamFile)
	}
	now := time.Date(2026, 3, 2, 9, 58, 0, 0, time.UTC)
	sim, err := gpu.NewSimulated("2xA100-80GB,1xA100-40GB:mig=3g.20gb+3g.20gb", "node-1", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inv, err := sim.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(streamFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	if err := enc.Encode(inv); err != nil {
		t.Fatal(err)
	}
	g0, g1, mig := inv.Devices[0].UUID, inv.Devices[1].UUID, inv.Devices[2].MIGInstances[0].UUID
	for step := range 500 {
		must(t, sim.SetLoad(g0, 0.5+0.45*math.Sin(float64(step)/7)))
		load1 := 0.0
		if step >= 120 {
			load1 = 0.9
		}
		must(t, sim.SetLoad(g1, load1))
		must(t, sim.SetProcessMemory(g0, 100, int64(20000+step*37%9000)))
		must(t, sim.SetProcessMemory(mig, 200, int64(1000+step%13*500)))
		switch step {
		case 100:
			must(t, sim.InjectXID(g0, 13))
		case 300:
			must(t, sim.InjectXID(g0, 48))
		}
		smp, err := sim.Sample(ctx)
		must(t, err)
		for i := range smp.Devices {
			smp.Devices[i].Processes = nil // telemetry does not store them
		}
		must(t, enc.Encode(smp))
		now = now.Add(15 * time.Second)
	}
}
