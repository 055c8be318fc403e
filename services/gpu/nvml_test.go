//go:build cgo

package gpu

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fixedNow is a clock outside UTC, to show that samples are stamped in UTC.
func fixedNow() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600)) }

func openFake(t *testing.T, f *fakeNode) *nvmlSource {
	t.Helper()
	s, err := openNVML(f.srv, fixedNow)
	if err != nil {
		t.Fatalf("open mock NVML: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestOpenNVMLOnThisMachine opens the real library: without a driver it must
// fail cleanly with ErrNoDriver (the process surviving is part of the test);
// on a GPU machine it must discover at least one GPU.
func TestOpenNVMLOnThisMachine(t *testing.T) {
	src, err := OpenNVML(time.Now)
	if errors.Is(err, ErrNoDriver) {
		if !strings.Contains(err.Error(), "initialise NVML") {
			t.Errorf("error %q does not say what failed", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("OpenNVML: %v", err)
	}
	defer src.Close()
	inv, err := src.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(inv.Devices) == 0 || inv.DriverVersion == "" {
		t.Errorf("a driver is present but the inventory is %+v", inv)
	}
	if _, err := src.Sample(context.Background()); err != nil {
		t.Errorf("Sample: %v", err)
	}
}

func TestOpenNVMLInitFailure(t *testing.T) {
	tests := []struct {
		ret      nvml.Return
		noDriver bool
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, true},
		{nvml.ERROR_DRIVER_NOT_LOADED, true},
		{nvml.ERROR_NO_PERMISSION, false},
		{nvml.ERROR_LIB_RM_VERSION_MISMATCH, false},
	}
	for _, tt := range tests {
		t.Run(tt.ret.String(), func(t *testing.T) {
			// A bare mock panics on any call but Init: the test proves that a
			// failed Init is followed by no other NVML call.
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tt.ret }}
			s, err := openNVML(lib, fixedNow)
			if s != nil || err == nil {
				t.Fatalf("openNVML = %v, %v; want an error", s, err)
			}
			if errors.Is(err, ErrNoDriver) != tt.noDriver {
				t.Errorf("errors.Is(%q, ErrNoDriver) = %v, want %v", err, !tt.noDriver, tt.noDriver)
			}
			if !errors.Is(err, tt.ret) || !strings.Contains(err.Error(), tt.ret.String()) {
				t.Errorf("error %q does not carry %s", err, tt.ret)
			}
		})
	}
}

func TestOpenNVMLShutsDownWhenDevicesFail(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.device(3).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	_, err := openNVML(f.srv, fixedNow)
	if err == nil || !strings.Contains(err.Error(), "GPU 3") || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Fatalf("openNVML error = %v; want GPU 3 lost", err)
	}
	if f.shutdowns != 1 {
		t.Errorf("NVML shut down %d times after a failed open, want 1", f.shutdowns)
	}
}

func TestDiscoverDGXH100(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.ccState = nvml.CC_SYSTEM_FEATURE_ENABLED
	s := openFake(t, f)
	inv, err := s.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if inv.DriverVersion != "550.54.15" || inv.CUDAVersion != "12.4" || inv.ConfidentialCompute != CCOn || inv.Simulated {
		t.Errorf("node = driver %q, CUDA %q, CC %q, simulated %v; want 550.54.15, 12.4, on, false",
			inv.DriverVersion, inv.CUDAVersion, inv.ConfidentialCompute, inv.Simulated)
	}
	if len(inv.Devices) != 8 {
		t.Fatalf("got %d devices, want 8", len(inv.Devices))
	}
	uuidShape := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for i, d := range inv.Devices {
		if d.Index != i || d.UUID != f.device(i).UUID || !uuidShape.MatchString(d.UUID) {
			t.Errorf("device %d: index %d, UUID %q; want the mock's %q", i, d.Index, d.UUID, f.device(i).UUID)
		}
		if d.Name != "NVIDIA H100 80GB HBM3" || d.Model != "H100-80GB" || d.MemoryMiB != 81920 {
			t.Errorf("device %d: %q [%s] %d MiB; want NVIDIA H100 80GB HBM3 [H100-80GB] 81920 MiB", i, d.Name, d.Model, d.MemoryMiB)
		}
		if want := "0000" + f.device(i).PciBusID; d.PCIBusID != want {
			t.Errorf("device %d: PCI bus %q, want %q", i, d.PCIBusID, want)
		}
		if d.MIG != MIGDisabled || d.MIGInstances != nil || !d.XIDEvents || d.Simulated {
			t.Errorf("device %d: MIG %s %v, XID %v, simulated %v; want disabled, none, watched, false", i, d.MIG, d.MIGInstances, d.XIDEvents, d.Simulated)
		}
		if len(d.NVLinkPeers) != 7 || slices.ContainsFunc(d.NVLinkPeers, func(p Peer) bool { return p.Index == i }) {
			t.Errorf("device %d: NVLink peers %v; want the 7 others", i, d.NVLinkPeers)
		}
		for _, p := range d.NVLinkPeers {
			if p.UUID != f.device(p.Index).UUID {
				t.Errorf("device %d: peer %d has UUID %q, want %q", i, p.Index, p.UUID, f.device(p.Index).UUID)
			}
		}
	}
}

func TestDiscoverMIG(t *testing.T) {
	tests := []struct {
		name     string
		srv      *server.Server
		gis      []int
		ciSlices []uint32
		want     []string
		memMiB   []int64
	}{
		{"H100 3g+3g", dgxh100.New(),
			[]int{nvml.GPU_INSTANCE_PROFILE_3_SLICE, nvml.GPU_INSTANCE_PROFILE_3_SLICE}, []uint32{0, 0},
			[]string{"3g.40gb", "3g.40gb"}, []int64{40960, 40960}},
		{"H100 1g, 1g.20gb, 2g and a 1c in a 3g", dgxh100.New(),
			[]int{nvml.GPU_INSTANCE_PROFILE_1_SLICE, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, nvml.GPU_INSTANCE_PROFILE_2_SLICE, nvml.GPU_INSTANCE_PROFILE_3_SLICE},
			[]uint32{0, 0, 0, 1},
			[]string{"1g.10gb", "1g.20gb", "2g.20gb", "1c.3g.40gb"}, []int64{10240, 20480, 20480, 40960}},
		{"A100-40GB 7x1g", dgxa100.New(),
			slices.Repeat([]int{nvml.GPU_INSTANCE_PROFILE_1_SLICE}, 7), make([]uint32, 7),
			slices.Repeat([]string{"1g.5gb"}, 7), slices.Repeat([]int64{4864}, 7)},
		{"A100-40GB 4g+2g+1g", dgxa100.New(),
			[]int{nvml.GPU_INSTANCE_PROFILE_4_SLICE, nvml.GPU_INSTANCE_PROFILE_2_SLICE, nvml.GPU_INSTANCE_PROFILE_1_SLICE}, make([]uint32, 3),
			[]string{"4g.20gb", "2g.10gb", "1g.5gb"}, []int64{19968, 9856, 4864}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeNode(tt.srv)
			uuids := f.partition(t, 2, tt.gis, tt.ciSlices)
			s := openFake(t, f)
			inv, err := s.Discover(context.Background())
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			d := inv.Devices[2]
			if d.MIG != MIGEnabled || len(d.MIGInstances) != len(tt.want) {
				t.Fatalf("GPU 2: MIG %s with %d instances, want enabled with %d", d.MIG, len(d.MIGInstances), len(tt.want))
			}
			for k, mi := range d.MIGInstances {
				if mi.UUID != uuids[k] || mi.Profile != tt.want[k] || mi.MemoryMiB != tt.memMiB[k] {
					t.Errorf("instance %d = %s %s %d MiB, want %s %s %d MiB", k, mi.UUID, mi.Profile, mi.MemoryMiB, uuids[k], tt.want[k], tt.memMiB[k])
				}
			}
			if inv.Devices[1].MIG != MIGDisabled {
				t.Errorf("GPU 1 MIG %s, want disabled", inv.Devices[1].MIG)
			}
		})
	}
}

func TestDiscoverMixedServer(t *testing.T) {
	f := newFakeNode(dgxh100.NewWithGPUs(gpus.H100_SXM5_80GB, gpus.A100_PCIE_80GB, gpus.A30_PCIE_24GB))
	f.nvlinkPeers = func(i, j int) bool { return false }
	f.srv.LookupSymbolFunc = func(name string) error {
		if name == "nvmlSystemGetConfComputeState" {
			return errors.New("undefined symbol")
		}
		return nil
	}
	f.srv.SystemGetConfComputeStateFunc = nil // calling it would panic, as a real old driver would abort
	f.device(2).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	f.device(2).GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED }
	s := openFake(t, f)
	inv, err := s.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if inv.ConfidentialCompute != CCUnknown {
		t.Errorf("CC = %s on a driver without the function, want unknown", inv.ConfidentialCompute)
	}
	want := []struct {
		model string
		mig   MIGMode
		pci   bool
	}{{"H100-80GB", MIGDisabled, true}, {"A100-80GB", MIGDisabled, true}, {"A30-PCIE-24GB", MIGUnsupported, false}}
	for i, w := range want {
		d := inv.Devices[i]
		if d.Model != w.model || d.MIG != w.mig || (d.PCIBusID != "") != w.pci || d.NVLinkPeers != nil {
			t.Errorf("device %d = %s, MIG %s, PCI %q, peers %v; want %s, MIG %s, PCI known %v, no peers",
				i, d.Model, d.MIG, d.PCIBusID, d.NVLinkPeers, w.model, w.mig, w.pci)
		}
	}
}

func TestDiscoverFailsOnUnexpectedError(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.device(5).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
	s := openFake(t, f)
	_, err := s.Discover(context.Background())
	if !errors.Is(err, nvml.ERROR_UNKNOWN) || !strings.Contains(err.Error(), "GPU 5: read name") {
		t.Fatalf("Discover error = %v; want GPU 5's name read failure", err)
	}
}

func TestSampleDGXH100(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.bare[7] = true
	f.compute[1] = []nvml.ProcessInfo{
		{Pid: 4242, UsedGpuMemory: 512 << 20, GpuInstanceId: noInstance, ComputeInstanceId: noInstance},
		{Pid: 4243, UsedGpuMemory: valueNotAvailable, GpuInstanceId: noInstance, ComputeInstanceId: noInstance},
	}
	f.graphics[1] = []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 600 << 20, GpuInstanceId: noInstance, ComputeInstanceId: noInstance}}
	s := openFake(t, f)
	ctx := context.Background()

	first, err := s.Sample(ctx)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if !first.Time.Equal(fixedNow()) || first.Time.Location() != time.UTC || first.Simulated {
		t.Errorf("sample time %v (simulated %v), want %v in UTC", first.Time, first.Simulated, fixedNow())
	}
	for i, ds := range first.Devices {
		if ds.Index != i || ds.UUID != f.device(i).UUID || ds.Error != "" {
			t.Errorf("device %d: index %d UUID %q error %q", i, ds.Index, ds.UUID, ds.Error)
		}
		got := []any{deref(ds.UtilizationPct), deref(ds.MemoryUsedMiB), deref(ds.TemperatureC), deref(ds.PowerW), deref(ds.SMClockMHz)}
		want := []any{10 * i, int64(1024 * (i + 1)), 40 + i, 100 + float64(i), 1980}
		if !slices.Equal(got, want) {
			t.Errorf("device %d: util, mem, temp, power, SM = %v, want %v", i, got, want)
		}
		if ds.NVLinkTxKiBps != nil || ds.NVLinkRxKiBps != nil {
			t.Errorf("device %d: NVLink rate on the first sample, want none before two readings", i)
		}
		if i == 7 {
			if ds.PCIeTxKiBps != nil || ds.PCIeRxKiBps != nil || ds.ECCCorrected != nil || ds.ECCUncorrected != nil {
				t.Errorf("device 7 does not support PCIe counters or ECC but reported %+v", ds)
			}
			continue
		}
		if *ds.PCIeTxKiBps != int64(1000+i) || *ds.PCIeRxKiBps != int64(2000+i) || *ds.ECCCorrected != int64(i) || *ds.ECCUncorrected != 0 {
			t.Errorf("device %d: PCIe %d/%d ECC %d/%d", i, *ds.PCIeTxKiBps, *ds.PCIeRxKiBps, *ds.ECCCorrected, *ds.ECCUncorrected)
		}
	}
	procs := first.Devices[1].Processes
	if len(procs) != 2 || procs[0].PID != 4242 || deref(procs[0].UsedMiB) != int64(600) || procs[1].PID != 4243 || procs[1].UsedMiB != nil {
		t.Errorf("GPU 1 processes = %+v; want 4242 once with the larger 600 MiB, 4243 with memory undisclosed", procs)
	}

	f.advanceNVLink(3_000_000, 2_000_000) // 3 GB in 2 s
	second, err := s.Sample(ctx)
	if err != nil {
		t.Fatalf("second Sample: %v", err)
	}
	for i, ds := range second.Devices {
		tx, rx := ds.NVLinkTxKiBps, ds.NVLinkRxKiBps
		if i == 7 {
			if tx != nil || rx != nil {
				t.Errorf("device 7 has no NVLink but reported %v/%v", deref(tx), deref(rx))
			}
			continue
		}
		if deref(tx) != int64(1_500_000) || deref(rx) != int64(3_000_000) {
			t.Errorf("device %d NVLink = %v/%v KiB/s, want 1500000/3000000", i, deref(tx), deref(rx))
		}
	}
}

func TestSampleNVLinkCounterReset(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	s := openFake(t, f)
	nvlinkTx := func() any {
		t.Helper()
		smp, err := s.Sample(context.Background())
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		return deref(smp.Devices[0].NVLinkTxKiBps)
	}
	nvlinkTx()
	f.resetNVLink()
	f.advanceNVLink(1000, 1_000_000)
	if got := nvlinkTx(); got != nil {
		t.Errorf("NVLink rate %v across a counter reset; want none", got)
	}
	f.advanceNVLink(4000, 2_000_000)
	if got := nvlinkTx(); got != int64(2000) {
		t.Errorf("NVLink rate %v after the reset, want 2000 KiB/s", got)
	}
}

func TestSampleReportsALostGPUAndReadsTheOthers(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.lost[4] = true
	s := openFake(t, f)
	smp, err := s.Sample(context.Background())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	lost := smp.Devices[4]
	if !strings.Contains(lost.Error, "read temperature") || !strings.Contains(lost.Error, "ERROR_GPU_IS_LOST") || lost.TemperatureC != nil {
		t.Errorf("lost GPU: error %q, temperature %v; want the failure named and no temperature", lost.Error, deref(lost.TemperatureC))
	}
	if deref(lost.PowerW) != 104.0 {
		t.Errorf("lost GPU: power %v; the fields that could be read must be kept", deref(lost.PowerW))
	}
	if smp.Devices[3].Error != "" || deref(smp.Devices[3].TemperatureC) != 43 {
		t.Errorf("GPU 3 is affected by GPU 4's loss: %+v", smp.Devices[3])
	}
}

func TestSampleXIDs(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.bare[6] = true
	s := openFake(t, f)
	ctx := context.Background()
	inv, err := s.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if inv.Devices[6].XIDEvents || !inv.Devices[5].XIDEvents {
		t.Errorf("XID watch: GPU 5 %v, GPU 6 %v; want watched, not watched", inv.Devices[5].XIDEvents, inv.Devices[6].XIDEvents)
	}
	f.raiseXID(2, 79)
	f.raiseXID(5, 48)
	f.raiseXID(2, 13)
	smp, err := s.Sample(ctx)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	for i, ds := range smp.Devices {
		want := map[int][]int{2: {79, 13}, 5: {48}}[i]
		if !slices.Equal(ds.XIDs, want) {
			t.Errorf("GPU %d XIDs = %v, want %v", i, ds.XIDs, want)
		}
	}
	again, err := s.Sample(ctx)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	for i, ds := range again.Devices {
		if ds.XIDs != nil {
			t.Errorf("GPU %d reported XIDs %v twice", i, ds.XIDs)
		}
	}
}

func TestMIGSampleAndProcessMemory(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	uuids := f.partition(t, 0, []int{nvml.GPU_INSTANCE_PROFILE_3_SLICE, nvml.GPU_INSTANCE_PROFILE_3_SLICE}, []uint32{0, 0})
	s := openFake(t, f)
	inv, err := s.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	second := inv.Devices[0].MIGInstances[1]
	f.compute[0] = []nvml.ProcessInfo{{Pid: 77, UsedGpuMemory: 2048 << 20,
		GpuInstanceId: uint32(second.GPUInstanceID), ComputeInstanceId: uint32(second.ComputeInstanceID)}}
	f.compute[3] = []nvml.ProcessInfo{{Pid: 88, UsedGpuMemory: 1 << 30, GpuInstanceId: noInstance, ComputeInstanceId: noInstance}}

	smp, err := s.Sample(context.Background())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	d0 := smp.Devices[0]
	if d0.UtilizationPct != nil {
		t.Errorf("utilisation %d in MIG mode, where NVML has none", *d0.UtilizationPct)
	}
	if len(d0.MIG) != 2 || d0.MIG[0].UUID != uuids[0] || deref(d0.MIG[0].MemoryUsedMiB) != int64(100) || deref(d0.MIG[1].MemoryUsedMiB) != int64(200) {
		t.Errorf("MIG samples = %+v; want %s at 100 MiB and %s at 200 MiB", d0.MIG, uuids[0], uuids[1])
	}
	got, err := s.ProcessMemory(context.Background())
	if err != nil {
		t.Fatalf("ProcessMemory: %v", err)
	}
	want := []ProcessUsage{
		{PID: 77, DeviceIndex: 0, DeviceUUID: f.device(0).UUID, MIGUUID: uuids[1], UsedMiB: ptr(int64(2048))},
		{PID: 88, DeviceIndex: 3, DeviceUUID: f.device(3).UUID, UsedMiB: ptr(int64(1024))},
	}
	if !slices.EqualFunc(got, want, equalUsage) {
		t.Errorf("ProcessMemory = %+v, want %+v", got, want)
	}
}

func TestProcessMemoryFailure(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.device(2).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_UNKNOWN }
	s := openFake(t, f)
	_, err := s.ProcessMemory(context.Background())
	if !errors.Is(err, nvml.ERROR_UNKNOWN) || !strings.Contains(err.Error(), "compute processes of GPU 2") {
		t.Errorf("ProcessMemory error = %v; want GPU 2's failure", err)
	}
}

func TestNVMLClose(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	s, err := openNVML(f.srv, fixedNow)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if s.Simulated() {
		t.Error("NVML source says it is simulated")
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if f.freed != 1 || f.shutdowns != 1 {
		t.Errorf("after two Closes: %d event sets freed, %d shutdowns; want 1 and 1", f.freed, f.shutdowns)
	}
	ctx := context.Background()
	_, errD := s.Discover(ctx)
	_, errS := s.Sample(ctx)
	_, errP := s.ProcessMemory(ctx)
	for _, err := range []error{errD, errS, errP} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call after Close: %v, want ErrClosed", err)
		}
	}
}

func TestNVMLCancelledContext(t *testing.T) {
	s := openFake(t, newFakeNode(dgxh100.New()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Discover(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Discover: %v, want context.Canceled", err)
	}
	if _, err := s.Sample(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Sample: %v, want context.Canceled", err)
	}
}

func TestNVMLWithoutEventSupport(t *testing.T) {
	f := newFakeNode(dgxh100.New())
	f.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	s := openFake(t, f)
	inv, err := s.Discover(context.Background())
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	for _, d := range inv.Devices {
		if d.XIDEvents {
			t.Errorf("GPU %d claims XID events without an event set", d.Index)
		}
	}
	if _, err := s.Sample(context.Background()); err != nil {
		t.Errorf("Sample: %v", err)
	}
}
