//go:build cgo

package gpu

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// noInstance is the GPU or compute instance id NVML gives outside MIG.
const noInstance = 0xFFFFFFFF

// migDevice is one MIG device handle of a GPU in MIG mode.
type migDevice struct {
	handle            nvml.Device
	uuid              string
	gpuInstanceID     int
	computeInstanceID int
}

// Discover reads driver, devices, MIG layout and NVLink peers.
func (s *nvmlSource) Discover(ctx context.Context) (Inventory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return Inventory{}, fmt.Errorf("discover GPUs: %w", err)
	}
	driver, ret := s.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return Inventory{}, fmt.Errorf("discover GPUs: read driver version: %w", ret)
	}
	inv := Inventory{DriverVersion: driver}
	cuda, ret := s.lib.SystemGetCudaDriverVersion()
	ok, err := present(ret, "read CUDA driver version")
	if err != nil {
		return Inventory{}, fmt.Errorf("discover GPUs: %w", err)
	}
	if ok {
		// NVML encodes 12.4 as 12040.
		inv.CUDAVersion = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)
	}
	if inv.ConfidentialCompute, err = s.ccState(); err != nil {
		return Inventory{}, fmt.Errorf("discover GPUs: %w", err)
	}
	for i := range s.devices {
		if err := ctx.Err(); err != nil {
			return Inventory{}, fmt.Errorf("discover GPUs: %w", err)
		}
		d, err := s.discoverDevice(i)
		if err != nil {
			return Inventory{}, fmt.Errorf("discover GPU %d: %w", i, err)
		}
		inv.Devices = append(inv.Devices, d)
	}
	for i := range inv.Devices {
		peers, err := s.nvlinkPeers(i)
		if err != nil {
			return Inventory{}, fmt.Errorf("discover NVLink peers of GPU %d: %w", i, err)
		}
		inv.Devices[i].NVLinkPeers = peers
	}
	return inv, nil
}

// ccState reads the system's confidential-computing feature. Drivers before
// R535 lack the function; calling a missing symbol would abort the process, so
// its presence is checked first.
func (s *nvmlSource) ccState() (CCState, error) {
	if s.lib.Extensions().LookupSymbol("nvmlSystemGetConfComputeState") != nil {
		return CCUnknown, nil
	}
	state, ret := s.lib.SystemGetConfComputeState()
	ok, err := present(ret, "read confidential-computing state")
	if !ok {
		return CCUnknown, err
	}
	if state.CcFeature == nvml.CC_SYSTEM_FEATURE_ENABLED {
		return CCOn, nil
	}
	return CCOff, nil
}

func (s *nvmlSource) discoverDevice(i int) (Device, error) {
	dev := s.devices[i]
	d := Device{Index: i, UUID: s.uuids[i], MIG: MIGUnsupported, XIDEvents: s.xidWatched[i]}
	name, ret := dev.GetName()
	if _, err := present(ret, "read name"); err != nil {
		return Device{}, err
	}
	d.Name = name
	mem, ret := dev.GetMemoryInfo()
	if _, err := present(ret, "read memory"); err != nil {
		return Device{}, err
	}
	d.MemoryMiB = bytesToMiB(mem.Total)
	d.Model = modelKey(d.Name, d.MemoryMiB)
	pci, ret := dev.GetPciInfo()
	if _, err := present(ret, "read PCI info"); err != nil {
		return Device{}, err
	}
	d.PCIBusID = cString(pci.BusId[:])
	current, _, ret := dev.GetMigMode()
	ok, err := present(ret, "read MIG mode")
	switch {
	case err != nil:
		return Device{}, err
	case !ok:
		return d, nil
	case current != nvml.DEVICE_MIG_ENABLE:
		d.MIG = MIGDisabled
		return d, nil
	}
	d.MIG = MIGEnabled
	d.MIGInstances, err = s.migInstances(dev, d.MemoryMiB)
	return d, err
}

// migInstances describes the MIG devices of a GPU in MIG mode.
func (s *nvmlSource) migInstances(dev nvml.Device, deviceMemoryMiB int64) ([]MIGInstance, error) {
	migs, err := migDevices(dev)
	if err != nil {
		return nil, err
	}
	var out []MIGInstance
	for _, m := range migs {
		attrs, ret := m.handle.GetAttributes()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("read attributes of MIG device %s: %w", m.uuid, ret)
		}
		mem, ret := m.handle.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("read memory of MIG device %s: %w", m.uuid, ret)
		}
		out = append(out, MIGInstance{
			UUID: m.uuid,
			Profile: migProfileName(int(attrs.GpuInstanceSliceCount), int(attrs.ComputeInstanceSliceCount),
				int64(attrs.MemorySizeMB), deviceMemoryMiB),
			MemoryMiB:         bytesToMiB(mem.Total),
			GPUInstanceID:     m.gpuInstanceID,
			ComputeInstanceID: m.computeInstanceID,
		})
	}
	return out, nil
}

// migDevices lists the MIG devices of a GPU; none when MIG is off or unsupported.
func migDevices(dev nvml.Device) ([]migDevice, error) {
	current, _, ret := dev.GetMigMode()
	if ok, err := present(ret, "read MIG mode"); !ok || current != nvml.DEVICE_MIG_ENABLE {
		return nil, err
	}
	slots, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count MIG slots: %w", ret)
	}
	var out []migDevice
	for slot := range slots {
		h, ret := dev.GetMigDeviceHandleByIndex(slot)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("open MIG slot %d: %w", slot, ret)
		}
		m := migDevice{handle: h}
		if m.uuid, ret = h.GetUUID(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("read UUID of MIG slot %d: %w", slot, ret)
		}
		if m.gpuInstanceID, ret = h.GetGpuInstanceId(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("read GPU instance of MIG device %s: %w", m.uuid, ret)
		}
		if m.computeInstanceID, ret = h.GetComputeInstanceId(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("read compute instance of MIG device %s: %w", m.uuid, ret)
		}
		out = append(out, m)
	}
	return out, nil
}

// nvlinkPeers lists the GPUs that GPU i reaches over NVLink, directly or
// through NVSwitch, as NVML's peer-to-peer status reports it.
func (s *nvmlSource) nvlinkPeers(i int) ([]Peer, error) {
	var peers []Peer
	for j, other := range s.devices {
		if j == i {
			continue
		}
		status, ret := s.devices[i].GetP2PStatus(other, nvml.P2P_CAPS_INDEX_NVLINK)
		ok, err := present(ret, fmt.Sprintf("read NVLink status to GPU %d", j))
		if err != nil {
			return nil, err
		}
		if ok && status == nvml.P2P_STATUS_OK {
			peers = append(peers, Peer{Index: j, UUID: s.uuids[j]})
		}
	}
	return peers, nil
}
