//go:build cgo

package gpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// maxEventsPerSample bounds how many queued events one Sample drains.
const maxEventsPerSample = 256

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the
// driver does not disclose a process's memory (e.g. without permission).
const valueNotAvailable = math.MaxUint64

// Sample reads every device. A device that fails to answer a field carries the
// failure in its Error, and the other fields and devices are still read.
func (s *nvmlSource) Sample(ctx context.Context) (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return Sample{}, fmt.Errorf("sample GPUs: %w", err)
	}
	out := Sample{Time: s.now().UTC(), Devices: make([]DeviceSample, len(s.devices))}
	xids, xidErr := s.drainXIDs()
	for i := range s.devices {
		if err := ctx.Err(); err != nil {
			return Sample{}, fmt.Errorf("sample GPUs: %w", err)
		}
		r := &reader{}
		out.Devices[i] = s.sampleDevice(i, r)
		out.Devices[i].XIDs = xids[i]
		if xidErr != nil && s.xidWatched[i] {
			r.errs = append(r.errs, xidErr)
		}
		out.Devices[i].Error = r.message()
	}
	return out, nil
}

// reader collects the failures of one device's reads, so that one failing
// field leaves the others readable.
type reader struct{ errs []error }

// ok reports whether a value was read, recording any unexpected failure.
func (r *reader) ok(ret nvml.Return, what string) bool {
	ok, err := present(ret, what)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return ok
}

func (r *reader) message() string {
	msgs := make([]string, len(r.errs))
	for i, err := range r.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (s *nvmlSource) sampleDevice(i int, r *reader) DeviceSample {
	dev := s.devices[i]
	ds := DeviceSample{Index: i, UUID: s.uuids[i]}
	if u, ret := dev.GetUtilizationRates(); r.ok(ret, "read utilisation") {
		ds.UtilizationPct = ptr(int(u.Gpu))
	}
	if m, ret := dev.GetMemoryInfo(); r.ok(ret, "read memory") {
		ds.MemoryUsedMiB = ptr(bytesToMiB(m.Used))
	}
	if t, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); r.ok(ret, "read temperature") {
		ds.TemperatureC = ptr(int(t))
	}
	if mw, ret := dev.GetPowerUsage(); r.ok(ret, "read power") {
		ds.PowerW = ptr(float64(mw) / 1000)
	}
	if mhz, ret := dev.GetClockInfo(nvml.CLOCK_SM); r.ok(ret, "read SM clock") {
		ds.SMClockMHz = ptr(int(mhz))
	}
	s.sampleNVLink(i, &ds, r)
	if kib, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); r.ok(ret, "read PCIe tx") {
		ds.PCIeTxKiBps = ptr(int64(kib))
	}
	if kib, ret := dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); r.ok(ret, "read PCIe rx") {
		ds.PCIeRxKiBps = ptr(int64(kib))
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); r.ok(ret, "read corrected ECC errors") {
		ds.ECCCorrected = ptr(int64(n))
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok(ret, "read uncorrected ECC errors") {
		ds.ECCUncorrected = ptr(int64(n))
	}
	migs, err := migDevices(dev)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	for _, m := range migs {
		ms := MIGSample{UUID: m.uuid}
		if mem, ret := m.handle.GetMemoryInfo(); r.ok(ret, "read memory of MIG device "+m.uuid) {
			ms.MemoryUsedMiB = ptr(bytesToMiB(mem.Used))
		}
		ds.MIG = append(ds.MIG, ms)
	}
	procs, err := s.deviceProcesses(i, migs)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	ds.Processes = procs
	return ds
}

// sampleNVLink turns NVML's cumulative NVLink counters, summed over all links,
// into throughput since the previous reading.
func (s *nvmlSource) sampleNVLink(i int, ds *DeviceSample, r *reader) {
	fields := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: math.MaxUint32},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: math.MaxUint32},
	}
	prev := s.nvlink[i]
	s.nvlink[i] = nvlinkReading{}
	if !r.ok(s.devices[i].GetFieldValues(fields), "read NVLink counters") {
		return
	}
	tx, txOK, txErr := fieldUint(fields[0])
	rx, rxOK, rxErr := fieldUint(fields[1])
	if err := errors.Join(txErr, rxErr); err != nil {
		r.errs = append(r.errs, fmt.Errorf("read NVLink counters: %w", err))
		return
	}
	if !txOK || !rxOK {
		return
	}
	cur := nvlinkReading{txKiB: tx, rxKiB: rx, atMicros: fields[0].Timestamp, valid: true}
	s.nvlink[i] = cur
	// A counter that went back was reset; it gives no rate this time.
	if !prev.valid || cur.atMicros <= prev.atMicros || tx < prev.txKiB || rx < prev.rxKiB {
		return
	}
	seconds := float64(cur.atMicros-prev.atMicros) / 1e6
	ds.NVLinkTxKiBps = ptr(int64(float64(tx-prev.txKiB) / seconds))
	ds.NVLinkRxKiBps = ptr(int64(float64(rx-prev.rxKiB) / seconds))
}

// fieldUint reads an unsigned NVML field value.
func fieldUint(f nvml.FieldValue) (uint64, bool, error) {
	ok, err := present(nvml.Return(f.NvmlReturn), fmt.Sprintf("field %d", f.FieldId))
	if !ok {
		return 0, false, err
	}
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG:
		return binary.NativeEndian.Uint64(f.Value[:]), true, nil
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(f.Value[:4])), true, nil
	default:
		return 0, false, fmt.Errorf("field %d has value type %d, not an unsigned integer", f.FieldId, f.ValueType)
	}
}

// drainXIDs takes the XID errors queued since the previous call, by device index.
func (s *nvmlSource) drainXIDs() (map[int][]int, error) {
	if s.events == nil {
		return nil, nil
	}
	out := map[int][]int{}
	for range maxEventsPerSample {
		e, ret := s.events.Wait(0)
		if ret == nvml.ERROR_TIMEOUT {
			break
		}
		if ret != nvml.SUCCESS {
			return out, fmt.Errorf("read XID events: %w", ret)
		}
		if e.EventType != nvml.EventTypeXidCriticalError || e.Device == nil {
			continue
		}
		uuid, ret := e.Device.GetUUID()
		if ret != nvml.SUCCESS {
			return out, fmt.Errorf("read UUID of the GPU of XID %d: %w", e.EventData, ret)
		}
		if i, known := s.byUUID[uuid]; known {
			out[i] = append(out[i], int(e.EventData))
		}
	}
	return out, nil
}

// ProcessMemory lists the GPU memory of every process on every device.
func (s *nvmlSource) ProcessMemory(ctx context.Context) ([]ProcessUsage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return nil, fmt.Errorf("read GPU process memory: %w", err)
	}
	var out []ProcessUsage
	for i, dev := range s.devices {
		migs, err := migDevices(dev)
		if err != nil {
			return nil, fmt.Errorf("read GPU process memory of GPU %d: %w", i, err)
		}
		procs, err := s.deviceProcesses(i, migs)
		if err != nil {
			return nil, fmt.Errorf("read GPU process memory: %w", err)
		}
		out = append(out, procs...)
	}
	return out, nil
}

// deviceProcesses lists the compute, MPS and graphics processes of device i,
// once each: a process in several lists keeps the largest figure.
func (s *nvmlSource) deviceProcesses(i int, migs []migDevice) ([]ProcessUsage, error) {
	dev := s.devices[i]
	lists := []struct {
		what string
		read func() ([]nvml.ProcessInfo, nvml.Return)
	}{
		{"compute", dev.GetComputeRunningProcesses},
		{"MPS", dev.GetMPSComputeRunningProcesses},
		{"graphics", dev.GetGraphicsRunningProcesses},
	}
	type key struct{ pid, gi, ci uint32 }
	var out []ProcessUsage
	seen := map[key]int{}
	for _, l := range lists {
		infos, ret := l.read()
		ok, err := present(ret, fmt.Sprintf("list %s processes of GPU %d", l.what, i))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, p := range infos {
			u := ProcessUsage{PID: int(p.Pid), DeviceIndex: i, DeviceUUID: s.uuids[i], MIGUUID: migOf(migs, p)}
			if p.UsedGpuMemory != valueNotAvailable {
				u.UsedMiB = ptr(bytesToMiB(p.UsedGpuMemory))
			}
			k := key{p.Pid, p.GpuInstanceId, p.ComputeInstanceId}
			at, dup := seen[k]
			switch {
			case !dup:
				seen[k] = len(out)
				out = append(out, u)
			case u.UsedMiB != nil && (out[at].UsedMiB == nil || *u.UsedMiB > *out[at].UsedMiB):
				out[at].UsedMiB = u.UsedMiB
			}
		}
	}
	return out, nil
}

// migOf finds the MIG device a process runs in; empty outside MIG.
func migOf(migs []migDevice, p nvml.ProcessInfo) string {
	if p.GpuInstanceId == noInstance {
		return ""
	}
	for _, m := range migs {
		if uint32(m.gpuInstanceID) == p.GpuInstanceId && uint32(m.computeInstanceID) == p.ComputeInstanceId {
			return m.uuid
		}
	}
	return ""
}
