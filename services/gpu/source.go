package gpu

import (
	"context"
	"errors"
	"time"
)

// Source is what the node agent needs from the GPUs of its node. Implementations
// are safe for concurrent use.
type Source interface {
	// Discover reads what is installed: driver, devices, MIG layout, NVLink peers.
	// It reads the hardware again on every call, so a MIG change is seen.
	Discover(ctx context.Context) (Inventory, error)
	// Sample reads the current telemetry of every device, and the XID events
	// raised since the previous Sample.
	Sample(ctx context.Context) (Sample, error)
	// ProcessMemory lists the GPU memory of every process using a GPU. It is
	// cheaper than Sample, for the loop that enforces fractional-GPU memory limits.
	ProcessMemory(ctx context.Context) ([]ProcessUsage, error)
	// Simulated reports whether the devices are simulated rather than hardware.
	Simulated() bool
	// Close releases the source; later calls return ErrClosed. Calling it twice is harmless.
	Close() error
}

var (
	// ErrNoDriver means NVML could not be used at all: no NVIDIA driver, no
	// libnvidia-ml, or a binary built without cgo. The agent then reports no
	// GPUs, or simulated ones when asked to.
	ErrNoDriver = errors.New("no usable NVIDIA driver")
	// ErrClosed is returned by a Source used after Close.
	ErrClosed = errors.New("gpu source is closed")
	// ErrInvalidSpec wraps every error about a simulated-GPU spec.
	ErrInvalidSpec = errors.New("invalid simulated GPU spec")
)

// MIGMode is whether a device is partitioned into MIG instances.
type MIGMode string

// MIG modes.
const (
	MIGUnsupported MIGMode = "unsupported"
	MIGDisabled    MIGMode = "disabled"
	MIGEnabled     MIGMode = "enabled"
)

// CCState is the node's confidential-computing state.
type CCState string

// Confidential-computing states; unknown where NVML cannot tell.
const (
	CCUnknown CCState = "unknown"
	CCOff     CCState = "off"
	CCOn      CCState = "on"
)

// Inventory is what a node has installed.
type Inventory struct {
	// DriverVersion as NVML reports it, e.g. "550.54.15".
	DriverVersion string `json:"driver_version"`
	// CUDAVersion is the highest CUDA version the driver supports, e.g. "12.4";
	// empty when unknown.
	CUDAVersion string `json:"cuda_version,omitempty"`
	// ConfidentialCompute is system-wide in NVML, so it is reported per node.
	ConfidentialCompute CCState  `json:"confidential_compute"`
	Simulated           bool     `json:"simulated,omitempty"`
	Devices             []Device `json:"devices"`
}

// Device is one physical GPU.
type Device struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	// Name is the model name as NVML reports it, e.g. "NVIDIA H100 80GB HBM3";
	// simulated devices start with "SIMULATED ".
	Name string `json:"name"`
	// Model is Gantry's model key, e.g. "H100-80GB" (see KnownModels), or the
	// name without its vendor prefix for a model Gantry does not know.
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memory_mib"`
	// PCIBusID such as "00000000:18:00.0"; empty when unknown.
	PCIBusID     string        `json:"pci_bus_id,omitempty"`
	MIG          MIGMode       `json:"mig"`
	MIGInstances []MIGInstance `json:"mig_instances,omitempty"`
	NVLinkPeers  []Peer        `json:"nvlink_peers,omitempty"`
	// XIDEvents reports whether XID errors are watched on this device.
	XIDEvents bool `json:"xid_events"`
	Simulated bool `json:"simulated,omitempty"`
}

// MIGInstance is one MIG device: a compute instance inside a GPU instance.
type MIGInstance struct {
	// UUID such as "MIG-…", what CUDA_VISIBLE_DEVICES takes.
	UUID string `json:"uuid"`
	// Profile as NVML names it, e.g. "3g.40gb", or "1c.3g.40gb" for a compute
	// instance smaller than its GPU instance.
	Profile           string `json:"profile"`
	MemoryMiB         int64  `json:"memory_mib"`
	GPUInstanceID     int    `json:"gpu_instance_id"`
	ComputeInstanceID int    `json:"compute_instance_id"`
}

// Peer is a device reachable over NVLink, directly or through NVSwitch.
type Peer struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
}

// Sample is one reading of every device of a node.
type Sample struct {
	Time      time.Time      `json:"time"`
	Simulated bool           `json:"simulated,omitempty"`
	Devices   []DeviceSample `json:"devices"`
}

// DeviceSample is one reading of one device. A nil field was not reported by
// the device (for example utilisation in MIG mode, or ECC on a board without it).
type DeviceSample struct {
	Index          int      `json:"index"`
	UUID           string   `json:"uuid"`
	UtilizationPct *int     `json:"utilization_pct,omitempty"`
	MemoryUsedMiB  *int64   `json:"memory_used_mib,omitempty"`
	TemperatureC   *int     `json:"temperature_c,omitempty"`
	PowerW         *float64 `json:"power_w,omitempty"`
	SMClockMHz     *int     `json:"sm_clock_mhz,omitempty"`
	// NVLink throughput summed over all links, averaged since the previous
	// Sample; absent on the first Sample.
	NVLinkTxKiBps *int64 `json:"nvlink_tx_kibps,omitempty"`
	NVLinkRxKiBps *int64 `json:"nvlink_rx_kibps,omitempty"`
	// PCIe throughput over NVML's own short window.
	PCIeTxKiBps *int64 `json:"pcie_tx_kibps,omitempty"`
	PCIeRxKiBps *int64 `json:"pcie_rx_kibps,omitempty"`
	// ECC error counts since the driver loaded.
	ECCCorrected   *int64 `json:"ecc_corrected,omitempty"`
	ECCUncorrected *int64 `json:"ecc_uncorrected,omitempty"`
	// XIDs raised since the previous Sample, oldest first.
	XIDs      []int          `json:"xids,omitempty"`
	MIG       []MIGSample    `json:"mig,omitempty"`
	Processes []ProcessUsage `json:"processes,omitempty"`
	// Error says why the device could not be read completely, e.g. a GPU that
	// fell off the bus; the fields read before it are kept.
	Error string `json:"error,omitempty"`
}

// MIGSample is one reading of one MIG instance.
type MIGSample struct {
	UUID          string `json:"uuid"`
	MemoryUsedMiB *int64 `json:"memory_used_mib,omitempty"`
}

// ProcessUsage is the GPU memory one process holds on one device.
type ProcessUsage struct {
	PID         int    `json:"pid"`
	DeviceIndex int    `json:"device_index"`
	DeviceUUID  string `json:"device_uuid"`
	// MIGUUID is the MIG instance the process runs in; empty outside MIG.
	MIGUUID string `json:"mig_uuid,omitempty"`
	// UsedMiB is nil where the driver does not disclose it.
	UsedMiB *int64 `json:"used_mib,omitempty"`
}

func ptr[T any](v T) *T { return &v }
