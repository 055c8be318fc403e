package gpu

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// deref makes optional values comparable: nil, or the value.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func equalUsage(a, b ProcessUsage) bool {
	return a.PID == b.PID && a.DeviceIndex == b.DeviceIndex && a.DeviceUUID == b.DeviceUUID &&
		a.MIGUUID == b.MIGUUID && deref(a.UsedMiB) == deref(b.UsedMiB)
}

func newSim(t *testing.T, spec string) (*Simulated, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s, err := NewSimulated(spec, "node-a", clock.Now)
	if err != nil {
		t.Fatalf("NewSimulated(%q): %v", spec, err)
	}
	return s, clock
}

func discover(t *testing.T, s Source) Inventory {
	t.Helper()
	inv, err := s.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return inv
}

func sample(t *testing.T, s Source) Sample {
	t.Helper()
	smp, err := s.Sample(context.Background())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return smp
}

func TestSimulatedInventory(t *testing.T) {
	s, _ := newSim(t, "2xA100-80GB,4xL4-24GB")
	inv := discover(t, s)
	if !s.Simulated() || !inv.Simulated || inv.DriverVersion == "" || inv.CUDAVersion == "" || inv.ConfidentialCompute != CCOff {
		t.Errorf("node: simulated %v/%v, driver %q, CUDA %q, CC %s", s.Simulated(), inv.Simulated, inv.DriverVersion, inv.CUDAVersion, inv.ConfidentialCompute)
	}
	want := []struct {
		name, model string
		mem         int64
		mig         MIGMode
		peers       []int
	}{
		{"SIMULATED NVIDIA A100-SXM4-80GB", "A100-80GB", 81920, MIGDisabled, []int{1}},
		{"SIMULATED NVIDIA A100-SXM4-80GB", "A100-80GB", 81920, MIGDisabled, []int{0}},
		{"SIMULATED NVIDIA L4", "L4-24GB", 23034, MIGUnsupported, nil},
		{"SIMULATED NVIDIA L4", "L4-24GB", 23034, MIGUnsupported, nil},
		{"SIMULATED NVIDIA L4", "L4-24GB", 23034, MIGUnsupported, nil},
		{"SIMULATED NVIDIA L4", "L4-24GB", 23034, MIGUnsupported, nil},
	}
	if len(inv.Devices) != len(want) {
		t.Fatalf("got %d devices, want %d", len(inv.Devices), len(want))
	}
	uuidShape := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i, d := range inv.Devices {
		w := want[i]
		var peers []int
		for _, p := range d.NVLinkPeers {
			peers = append(peers, p.Index)
			if p.UUID != inv.Devices[p.Index].UUID {
				t.Errorf("device %d: peer %d UUID %q, want %q", i, p.Index, p.UUID, inv.Devices[p.Index].UUID)
			}
		}
		if d.Index != i || d.Name != w.name || d.Model != w.model || d.MemoryMiB != w.mem || d.MIG != w.mig || !slices.Equal(peers, w.peers) {
			t.Errorf("device %d = %d %q [%s] %d MiB MIG %s peers %v; want %q [%s] %d MiB MIG %s peers %v",
				i, d.Index, d.Name, d.Model, d.MemoryMiB, d.MIG, peers, w.name, w.model, w.mem, w.mig, w.peers)
		}
		if !d.Simulated || !d.XIDEvents || d.PCIBusID == "" || !uuidShape.MatchString(d.UUID) || seen[d.UUID] {
			t.Errorf("device %d: simulated %v, XID %v, PCI %q, UUID %q (seen before: %v)", i, d.Simulated, d.XIDEvents, d.PCIBusID, d.UUID, seen[d.UUID])
		}
		seen[d.UUID] = true
	}
}

func TestSimulatedUUIDsAreDeterministicPerSeed(t *testing.T) {
	uuids := func(seed string) []string {
		s, err := NewSimulated("2xH100-80GB,1xA100-40GB:mig=3g.20gb+3g.20gb", seed, newFakeClock().Now)
		if err != nil {
			t.Fatalf("NewSimulated: %v", err)
		}
		var out []string
		for _, d := range discover(t, s).Devices {
			out = append(out, d.UUID)
			for _, m := range d.MIGInstances {
				out = append(out, m.UUID)
			}
		}
		return out
	}
	a, again, b := uuids("node-a"), uuids("node-a"), uuids("node-b")
	if !slices.Equal(a, again) {
		t.Errorf("same seed gave different UUIDs:\n%v\n%v", a, again)
	}
	for i := range a {
		if a[i] == b[i] {
			t.Errorf("UUID %d is %s on both node-a and node-b", i, a[i])
		}
	}
}

func TestSimulatedMIGInventory(t *testing.T) {
	s, _ := newSim(t, "1xA100-40GB:mig=4g.20gb+2g.10gb+1g.5gb,1xH100-80GB")
	inv := discover(t, s)
	d := inv.Devices[0]
	if d.MIG != MIGEnabled || len(d.MIGInstances) != 3 {
		t.Fatalf("GPU 0: MIG %s with %d instances, want enabled with 3", d.MIG, len(d.MIGInstances))
	}
	wantProfiles := []string{"4g.20gb", "2g.10gb", "1g.5gb"}
	wantMem := []int64{19968, 9856, 4864}
	for k, mi := range d.MIGInstances {
		if !strings.HasPrefix(mi.UUID, "MIG-") || mi.Profile != wantProfiles[k] || mi.MemoryMiB != wantMem[k] || mi.GPUInstanceID != k+1 {
			t.Errorf("instance %d = %+v, want %s %d MiB", k, mi, wantProfiles[k], wantMem[k])
		}
	}
	if inv.Devices[1].MIG != MIGDisabled || inv.Devices[1].NVLinkPeers != nil {
		t.Errorf("GPU 1: MIG %s peers %v; want disabled and no peer (the only H100)", inv.Devices[1].MIG, inv.Devices[1].NVLinkPeers)
	}
}

func TestSimulatedDiscoverReturnsACopy(t *testing.T) {
	s, _ := newSim(t, "2xA100-40GB:mig=3g.20gb")
	inv := discover(t, s)
	inv.Devices[0].Name = "changed"
	inv.Devices[0].MIGInstances[0].Profile = "changed"
	inv.Devices[0].NVLinkPeers[0].UUID = "changed"
	again := discover(t, s)
	if again.Devices[0].Name == "changed" || again.Devices[0].MIGInstances[0].Profile == "changed" || again.Devices[0].NVLinkPeers[0].UUID == "changed" {
		t.Error("changing a discovered inventory changed the source")
	}
}

func TestNewSimulatedRejects(t *testing.T) {
	if _, err := NewSimulated("2xFOO", "n", newFakeClock().Now); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `unknown model "FOO"`) {
		t.Errorf("bad spec: %v", err)
	}
	if _, err := NewSimulated("1xL4-24GB", "n", nil); err == nil || !strings.Contains(err.Error(), "clock") {
		t.Errorf("nil clock: %v", err)
	}
}

func TestSimulatedSampleFollowsLoad(t *testing.T) {
	s, clock := newSim(t, "2xH100-80GB,1xL4-24GB")
	inv := discover(t, s)
	idle := sample(t, s)
	if !idle.Simulated || !idle.Time.Equal(clock.Now()) {
		t.Errorf("sample simulated %v at %v, want true at %v", idle.Simulated, idle.Time, clock.Now())
	}
	h := idle.Devices[0]
	got := []any{deref(h.UtilizationPct), deref(h.MemoryUsedMiB), deref(h.TemperatureC), deref(h.PowerW), deref(h.SMClockMHz),
		deref(h.NVLinkTxKiBps), deref(h.PCIeTxKiBps), deref(h.ECCCorrected), deref(h.ECCUncorrected)}
	want := []any{0, int64(0), 33, 70.0, 345, int64(0), int64(0), int64(0), int64(0)}
	if !slices.Equal(got, want) {
		t.Errorf("idle H100 = %v, want %v", got, want)
	}
	if l4 := idle.Devices[2]; l4.NVLinkTxKiBps != nil || l4.NVLinkRxKiBps != nil {
		t.Errorf("L4 reports NVLink %v/%v; a PCIe card has none", deref(l4.NVLinkTxKiBps), deref(l4.NVLinkRxKiBps))
	}

	if err := s.SetLoad(inv.Devices[0].UUID, 0.5); err != nil {
		t.Fatalf("SetLoad: %v", err)
	}
	busy := sample(t, s).Devices[0]
	got = []any{deref(busy.UtilizationPct), deref(busy.TemperatureC), deref(busy.PowerW), deref(busy.SMClockMHz),
		deref(busy.NVLinkTxKiBps), deref(busy.NVLinkRxKiBps), deref(busy.PCIeTxKiBps), deref(busy.PCIeRxKiBps)}
	want = []any{50, 33, 385.0, 1163, int64(0.25 * 450 * gib), int64(0.25 * 450 * gib), int64(0.025 * 50 * gib), int64(0.1 * 50 * gib)}
	if !slices.Equal(got, want) {
		t.Errorf("H100 at load 0.5 = %v, want %v (temperature not moved yet: no time passed)", got, want)
	}
	if other := sample(t, s).Devices[1]; deref(other.UtilizationPct) != 0 {
		t.Errorf("GPU 1 utilisation %v; only GPU 0 was loaded", deref(other.UtilizationPct))
	}
}

func TestSimulatedTemperatureLagsLoad(t *testing.T) {
	s, clock := newSim(t, "1xA100-80GB")
	uuid := discover(t, s).Devices[0].UUID
	if err := s.SetLoad(uuid, 1); err != nil {
		t.Fatalf("SetLoad: %v", err)
	}
	// Idle 32 °C, full load 72 °C, time constant one minute.
	steps := []struct {
		after time.Duration
		want  int
	}{
		{0, 32},
		{time.Minute, int(math.Round(72 - 40*math.Exp(-1)))}, // 57
		{time.Minute, int(math.Round(72 - 40*math.Exp(-2)))}, // 67
		{58 * time.Minute, 72},                               // settled
		{-10 * time.Minute, 72},                              // a clock stepping back changes nothing
	}
	for i, st := range steps {
		clock.Advance(st.after)
		if got := deref(sample(t, s).Devices[0].TemperatureC); got != st.want {
			t.Errorf("step %d (+%v): temperature %v, want %d", i, st.after, got, st.want)
		}
	}
	clock.Advance(10 * time.Minute)
	if err := s.SetLoad(uuid, 0); err != nil {
		t.Fatalf("SetLoad: %v", err)
	}
	clock.Advance(time.Minute)
	if got, want := deref(sample(t, s).Devices[0].TemperatureC), int(math.Round(32+40*math.Exp(-1))); got != want {
		t.Errorf("one minute after going idle: %v °C, want %d", got, want)
	}
}

func TestSimulatedProcessMemory(t *testing.T) {
	s, _ := newSim(t, "1xA100-40GB:mig=3g.20gb+3g.20gb,1xL4-24GB")
	inv := discover(t, s)
	a100, migA, migB, l4 := inv.Devices[0], inv.Devices[0].MIGInstances[0].UUID, inv.Devices[0].MIGInstances[1].UUID, inv.Devices[1]
	steps := []struct {
		uuid    string
		pid     int
		usedMiB int64
	}{
		{l4.UUID, 300, 4000},
		{migB, 200, 1000},
		{migA, 100, 5000},
		{l4.UUID, 300, 6000}, // replaces 4000
		{l4.UUID, 301, 0},
	}
	for _, st := range steps {
		if err := s.SetProcessMemory(st.uuid, st.pid, st.usedMiB); err != nil {
			t.Fatalf("SetProcessMemory(%s, %d, %d): %v", st.uuid, st.pid, st.usedMiB, err)
		}
	}
	got, err := s.ProcessMemory(context.Background())
	if err != nil {
		t.Fatalf("ProcessMemory: %v", err)
	}
	want := []ProcessUsage{
		{PID: 100, DeviceIndex: 0, DeviceUUID: a100.UUID, MIGUUID: migA, UsedMiB: ptr(int64(5000))},
		{PID: 200, DeviceIndex: 0, DeviceUUID: a100.UUID, MIGUUID: migB, UsedMiB: ptr(int64(1000))},
		{PID: 300, DeviceIndex: 1, DeviceUUID: l4.UUID, UsedMiB: ptr(int64(6000))},
		{PID: 301, DeviceIndex: 1, DeviceUUID: l4.UUID, UsedMiB: ptr(int64(0))},
	}
	if !slices.EqualFunc(got, want, equalUsage) {
		t.Errorf("ProcessMemory = %+v\nwant %+v", got, want)
	}
	smp := sample(t, s)
	d0, d1 := smp.Devices[0], smp.Devices[1]
	if deref(d0.MemoryUsedMiB) != int64(6000) || deref(d0.MIG[0].MemoryUsedMiB) != int64(5000) || deref(d0.MIG[1].MemoryUsedMiB) != int64(1000) || len(d0.Processes) != 2 {
		t.Errorf("A100: used %v, MIG %v/%v, %d processes; want 6000, 5000/1000, 2",
			deref(d0.MemoryUsedMiB), deref(d0.MIG[0].MemoryUsedMiB), deref(d0.MIG[1].MemoryUsedMiB), len(d0.Processes))
	}
	if d0.UtilizationPct != nil {
		t.Errorf("A100 in MIG mode reports utilisation %d, as NVML does not", *d0.UtilizationPct)
	}
	if deref(d1.MemoryUsedMiB) != int64(6000) {
		t.Errorf("L4 used %v MiB, want 6000", deref(d1.MemoryUsedMiB))
	}

	s.RemoveProcess(300)
	s.RemoveProcess(999) // not there: harmless
	if used := deref(sample(t, s).Devices[1].MemoryUsedMiB); used != int64(0) {
		t.Errorf("L4 used %v MiB after its process exited, want 0", used)
	}
}

func TestSimulatedSettersReject(t *testing.T) {
	s, _ := newSim(t, "1xA100-40GB:mig=3g.20gb,1xL4-24GB")
	inv := discover(t, s)
	a100, mig, l4 := inv.Devices[0].UUID, inv.Devices[0].MIGInstances[0].UUID, inv.Devices[1].UUID
	if err := s.SetProcessMemory(l4, 1, 20000); err != nil {
		t.Fatalf("SetProcessMemory: %v", err)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"load above 1", s.SetLoad(l4, 1.5), "between 0 and 1"},
		{"load below 0", s.SetLoad(l4, -0.1), "between 0 and 1"},
		{"load NaN", s.SetLoad(l4, math.NaN()), "between 0 and 1"},
		{"load on unknown GPU", s.SetLoad("GPU-nope", 0.5), `no simulated GPU has UUID "GPU-nope"`},
		{"load on a MIG UUID", s.SetLoad(mig, 0.5), "no simulated GPU has UUID"},
		{"pid 0", s.SetProcessMemory(l4, 0, 10), "pid 0 must be positive"},
		{"negative memory", s.SetProcessMemory(l4, 2, -1), "must not be negative"},
		{"unknown UUID", s.SetProcessMemory("MIG-nope", 2, 10), `no simulated GPU or MIG instance has UUID "MIG-nope"`},
		{"whole GPU in MIG mode", s.SetProcessMemory(a100, 2, 10), "is in MIG mode"},
		{"over the card", s.SetProcessMemory(l4, 2, 3035), "would hold 23035 MiB of its 23034 MiB"},
		{"over the MIG instance", s.SetProcessMemory(mig, 2, 19969), "would hold 19969 MiB of its 19968 MiB"},
		{"XID 0", s.InjectXID(l4, 0), "must be positive"},
		{"XID on unknown GPU", s.InjectXID("GPU-nope", 79), "no simulated GPU"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, tt.err, tt.want)
		}
	}
	if got := deref(sample(t, s).Devices[1].MemoryUsedMiB); got != int64(20000) {
		t.Errorf("refused calls changed the L4's memory to %v", got)
	}
}

func TestSimulatedXIDs(t *testing.T) {
	s, _ := newSim(t, "2xL4-24GB")
	inv := discover(t, s)
	for _, x := range []struct {
		dev, xid int
	}{{1, 79}, {0, 13}, {1, 48}} {
		if err := s.InjectXID(inv.Devices[x.dev].UUID, x.xid); err != nil {
			t.Fatalf("InjectXID: %v", err)
		}
	}
	smp := sample(t, s)
	if !slices.Equal(smp.Devices[0].XIDs, []int{13}) || !slices.Equal(smp.Devices[1].XIDs, []int{79, 48}) {
		t.Errorf("XIDs = %v / %v, want [13] / [79 48]", smp.Devices[0].XIDs, smp.Devices[1].XIDs)
	}
	if deref(smp.Devices[1].ECCUncorrected) != int64(1) || deref(smp.Devices[0].ECCUncorrected) != int64(0) {
		t.Errorf("uncorrected ECC = %v / %v; XID 48 on GPU 1 must count one", deref(smp.Devices[0].ECCUncorrected), deref(smp.Devices[1].ECCUncorrected))
	}
	again := sample(t, s)
	if again.Devices[0].XIDs != nil || again.Devices[1].XIDs != nil || deref(again.Devices[1].ECCUncorrected) != int64(1) {
		t.Errorf("second sample: XIDs %v / %v, ECC %v; want none, none, still 1", again.Devices[0].XIDs, again.Devices[1].XIDs, deref(again.Devices[1].ECCUncorrected))
	}
}

func TestSimulatedClosedAndCancelled(t *testing.T) {
	s, _ := newSim(t, "1xT4-16GB")
	uuid := discover(t, s).Devices[0].UUID
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Sample(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sample with a cancelled context: %v", err)
	}
	if _, err := s.Discover(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Discover with a cancelled context: %v", err)
	}
	if _, err := s.ProcessMemory(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ProcessMemory with a cancelled context: %v", err)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	bg := context.Background()
	_, errD := s.Discover(bg)
	_, errS := s.Sample(bg)
	_, errP := s.ProcessMemory(bg)
	errs := []error{errD, errS, errP, s.SetLoad(uuid, 1), s.SetProcessMemory(uuid, 1, 1), s.InjectXID(uuid, 1)}
	for i, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call %d after Close: %v, want ErrClosed", i, err)
		}
	}
}

// TestSimulatedConcurrentUse is for the race detector: the agent samples,
// enforces memory and changes load from different goroutines.
func TestSimulatedConcurrentUse(t *testing.T) {
	s, clock := newSim(t, "4xH100-80GB")
	inv := discover(t, s)
	var wg sync.WaitGroup
	for g := range 4 {
		uuid := inv.Devices[g].UUID
		wg.Go(func() {
			for k := range 50 {
				clock.Advance(time.Second)
				if err := s.SetLoad(uuid, float64(k%10)/10); err != nil {
					t.Error(err)
				}
				if err := s.SetProcessMemory(uuid, 1000+g, int64(k)); err != nil {
					t.Error(err)
				}
				if _, err := s.Sample(context.Background()); err != nil {
					t.Error(err)
				}
				if _, err := s.ProcessMemory(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := s.ProcessMemory(context.Background())
	if err != nil || len(got) != 4 {
		t.Fatalf("ProcessMemory = %d processes, %v; want 4", len(got), err)
	}
	for _, p := range got {
		if deref(p.UsedMiB) != int64(49) {
			t.Errorf("pid %d holds %v MiB, want the last value 49", p.PID, deref(p.UsedMiB))
		}
	}
}
