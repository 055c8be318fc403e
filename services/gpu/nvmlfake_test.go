//go:build cgo

package gpu

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeNode completes one of go-nvml's mock servers (dgxh100, dgxa100 …). The
// mocks model devices, memory and MIG instances, but not telemetry, events or
// MIG device handles; fakeNode adds those, with values a test can predict:
// device i reports utilisation 10·i %, i+1 GiB used, 40+i °C, 100+i W, 1980 MHz,
// PCIe 1000+i / 2000+i KiB/s and i corrected ECC errors.
type fakeNode struct {
	srv *server.Server

	mu          sync.Mutex
	events      []nvml.EventData // queued XID events
	freed       int              // event sets freed
	shutdowns   int
	ccState     uint32
	lost        map[int]bool // devices whose temperature read says the GPU is lost
	bare        map[int]bool // devices without ECC, PCIe counters, NVLink or events
	nvlinkKiB   uint64       // cumulative NVLink tx counter of every device; rx is twice it
	nvlinkAtUs  int64        // NVML timestamp of the counters
	compute     map[int][]nvml.ProcessInfo
	graphics    map[int][]nvml.ProcessInfo
	migHandles  map[int][]nvml.Device
	nvlinkPeers func(i, j int) bool
}

func newFakeNode(srv *server.Server) *fakeNode {
	f := &fakeNode{
		srv:         srv,
		nvlinkKiB:   5_000_000,             // counters run from boot,
		nvlinkAtUs:  1_772_366_400_000_000, // and NVML stamps them with wall time
		ccState:     nvml.CC_SYSTEM_FEATURE_DISABLED,
		lost:        map[int]bool{},
		bare:        map[int]bool{},
		compute:     map[int][]nvml.ProcessInfo{},
		graphics:    map[int][]nvml.ProcessInfo{},
		migHandles:  map[int][]nvml.Device{},
		nvlinkPeers: func(i, j int) bool { return true },
	}
	srv.ShutdownFunc = func() nvml.Return {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.shutdowns++
		return nvml.SUCCESS
	}
	srv.SystemGetConfComputeStateFunc = func() (nvml.ConfComputeSystemState, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return nvml.ConfComputeSystemState{CcFeature: f.ccState}, nvml.SUCCESS
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: f.nextEvent,
			FreeFunc: func() nvml.Return {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.freed++
				return nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
	for i, d := range srv.Devices {
		f.instrument(i, d.(*server.Device))
	}
	return f
}

func (f *fakeNode) device(i int) *server.Device { return f.srv.Devices[i].(*server.Device) }

func (f *fakeNode) nextEvent(timeoutMs uint32) (nvml.EventData, nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	e := f.events[0]
	f.events = f.events[1:]
	return e, nvml.SUCCESS
}

// raiseXID queues an XID error on device i, as the driver would.
func (f *fakeNode) raiseXID(i int, xid uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, nvml.EventData{Device: f.srv.Devices[i], EventType: nvml.EventTypeXidCriticalError, EventData: xid})
}

// advanceNVLink moves every device's NVLink counters on by kib over micros.
func (f *fakeNode) advanceNVLink(kib uint64, micros int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nvlinkKiB += kib
	f.nvlinkAtUs += micros
}

// resetNVLink zeroes the NVLink counters, as a driver reload does.
func (f *fakeNode) resetNVLink() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nvlinkKiB = 0
}

func (f *fakeNode) isBare(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bare[i]
}

func (f *fakeNode) instrument(i int, d *server.Device) {
	d.MemoryInfo.Used = uint64(i+1) << 30
	d.MemoryInfo.Free = d.MemoryInfo.Total - d.MemoryInfo.Used
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
		for k, c := range "0000" + d.PciBusID {
			p.BusId[k] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if mode, _, _ := d.GetMigMode(); mode == nvml.DEVICE_MIG_ENABLE {
			return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.Utilization{Gpu: uint32(10 * i), Memory: 5}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.lost[i] {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return uint32(40 + i), nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100_000 + 1000*i), nvml.SUCCESS }
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if c != nvml.CLOCK_SM {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return 1980, nvml.SUCCESS
	}
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		if f.isBare(i) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		if c == nvml.PCIE_UTIL_TX_BYTES {
			return uint32(1000 + i), nvml.SUCCESS
		}
		return uint32(2000 + i), nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
		if f.isBare(i) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		if t == nvml.MEMORY_ERROR_TYPE_CORRECTED {
			return uint64(i), nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
		f.mu.Lock()
		defer f.mu.Unlock()
		for k := range values {
			v := &values[k]
			if f.bare[i] {
				v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			counter := f.nvlinkKiB
			if v.FieldId == nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX {
				counter *= 2
			}
			v.NvmlReturn = uint32(nvml.SUCCESS)
			v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
			v.Timestamp = f.nvlinkAtUs
			binary.NativeEndian.PutUint64(v.Value[:], counter)
		}
		return nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.compute[i]), nvml.SUCCESS
	}
	d.GetMPSComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.graphics[i]), nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(other nvml.Device, c nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		if c != nvml.P2P_CAPS_INDEX_NVLINK {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if f.nvlinkPeers(i, other.(*server.Device).Index) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		if f.isBare(i) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.EventTypeXidCriticalError | nvml.EventTypePState, nvml.SUCCESS
	}
	d.RegisterEventsFunc = func(types uint64, _ nvml.EventSet) nvml.Return {
		if types != nvml.EventTypeXidCriticalError {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(slot int) (nvml.Device, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if slot >= len(f.migHandles[i]) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return f.migHandles[i][slot], nvml.SUCCESS
	}
}

// ciProfiles maps a compute instance's slice count to its NVML profile.
var ciProfiles = map[uint32]int{
	1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
	7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
}

// partition turns MIG on for device i and creates, through the mock's own MIG
// machinery, one GPU instance per entry of gis (GPU instance profiles), each
// with one compute instance of ciSlices[k] slices (0: the whole GPU instance).
// It returns the UUIDs of the MIG devices, in slot order.
func (f *fakeNode) partition(t *testing.T, i int, gis []int, ciSlices []uint32) []string {
	t.Helper()
	d := f.device(i)
	if ret, _ := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatalf("enable MIG on mock GPU %d: %v", i, ret)
	}
	var uuids []string
	for k, giProfile := range gis {
		giInfo, ret := d.GetGpuInstanceProfileInfo(giProfile)
		if ret != nvml.SUCCESS {
			t.Fatalf("mock GPU instance profile %d: %v", giProfile, ret)
		}
		gi, _ := d.CreateGpuInstance(&giInfo)
		n := ciSlices[k]
		if n == 0 {
			n = giInfo.SliceCount
		}
		ciInfo, ret := gi.GetComputeInstanceProfileInfo(ciProfiles[n], nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS {
			t.Fatalf("mock compute instance of %d slices in GPU instance profile %d: %v", n, giProfile, ret)
		}
		ci, _ := gi.CreateComputeInstance(&ciInfo)
		giID, ciID := gi.(*server.GpuInstance).Info.Id, ci.(*server.ComputeInstance).Info.Id
		uuid := fmt.Sprintf("MIG-%d-%d-%d", i, giID, ciID)
		memBytes := giInfo.MemorySizeMB << 20
		h := &mock.Device{
			GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return int(giID), nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return int(ciID), nvml.SUCCESS },
			GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
				return nvml.DeviceAttributes{
					GpuInstanceSliceCount:     giInfo.SliceCount,
					ComputeInstanceSliceCount: ciInfo.SliceCount,
					MemorySizeMB:              giInfo.MemorySizeMB,
				}, nvml.SUCCESS
			},
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				used := uint64(k+1) * 100 << 20
				return nvml.Memory{Total: memBytes, Used: used, Free: memBytes - used}, nvml.SUCCESS
			},
		}
		f.mu.Lock()
		f.migHandles[i] = append(f.migHandles[i], h)
		f.mu.Unlock()
		uuids = append(uuids, uuid)
	}
	return uuids
}
