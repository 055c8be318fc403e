package gpu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// simPrefix starts every simulated model name, so that no screen can show a
// simulated GPU as hardware.
const simPrefix = "SIMULATED "

// thermalTau is how fast a simulated GPU's temperature follows its load: after
// one tau it has covered 63% of the way to its new temperature.
const thermalTau = time.Minute

// xidDoubleBitECC is the XID the driver raises for an uncorrectable ECC error.
const xidDoubleBitECC = 48

// simulatedDriver and simulatedCUDA are what a simulated node reports, so that
// image compatibility checks have a plausible driver to compare with.
const (
	simulatedDriver = "550.54.15"
	simulatedCUDA   = "12.4"
)

// Simulated is a Source of made-up GPUs built from a spec. What it samples
// follows the load, processes and XIDs set through its methods and the
// injected clock; nothing is random.
type Simulated struct {
	now func() time.Time
	inv Inventory // fixed at construction; Discover hands out copies

	mu     sync.Mutex
	devs   []simDevice // by device index
	procs  []simProcess
	closed bool
}

type simDevice struct {
	model          model
	load           float64 // 0..1
	tempC          float64
	at             time.Time // when tempC was last brought up to date
	eccUncorrected int64
	xids           []int // raised since the last Sample
}

type simProcess struct {
	pid     int
	device  int
	migUUID string
	usedMiB int64
}

var _ Source = (*Simulated)(nil)

// NewSimulated builds simulated GPUs from spec, e.g. "2xA100-80GB,4xL4-24GB",
// "H100-80GB" or "1xA100-40GB:mig=3g.20gb+3g.20gb" (see KnownModels). UUIDs
// derive from seed (use the host name) so that each node's GPUs keep their
// identity across restarts and differ from every other node's. GPUs of an
// NVLink model (SXM boards) are NVLink peers of the other GPUs of that model.
func NewSimulated(spec, seed string, now func() time.Time) (*Simulated, error) {
	if now == nil {
		return nil, errors.New("new simulated GPUs: clock is required")
	}
	parts, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	start := now().UTC()
	s := &Simulated{now: now, inv: Inventory{
		DriverVersion:       simulatedDriver,
		CUDAVersion:         simulatedCUDA,
		ConfidentialCompute: CCOff,
		Simulated:           true,
	}}
	for _, p := range parts {
		for range p.count {
			index := len(s.devs)
			s.inv.Devices = append(s.inv.Devices, simDeviceInventory(p, index, seed))
			s.devs = append(s.devs, simDevice{model: p.model, tempC: p.model.idleC, at: start})
		}
	}
	linkPeers(s.inv.Devices, s.devs)
	return s, nil
}

func simDeviceInventory(p specPart, index int, seed string) Device {
	m := p.model
	d := Device{
		Index:     index,
		UUID:      "GPU-" + seededUUID(seed, fmt.Sprintf("gpu/%d/%s", index, m.key)),
		Name:      simPrefix + m.nvmlName,
		Model:     m.key,
		MemoryMiB: m.memoryMiB,
		PCIBusID:  fmt.Sprintf("00000000:%02X:00.0", 0x10+index),
		MIG:       MIGUnsupported,
		XIDEvents: true,
		Simulated: true,
	}
	if m.mig != nil {
		d.MIG = MIGDisabled
	}
	if p.mig != nil {
		d.MIG = MIGEnabled
		for j, prof := range p.mig {
			d.MIGInstances = append(d.MIGInstances, MIGInstance{
				UUID:          "MIG-" + seededUUID(seed, fmt.Sprintf("%s/mig/%d", d.UUID, j)),
				Profile:       prof.name,
				MemoryMiB:     prof.memoryMiB,
				GPUInstanceID: j + 1,
			})
		}
	}
	return d
}

// linkPeers joins every NVLink GPU to the other GPUs of its model, as an
// NVSwitch (or V100's hybrid cube mesh, simplified) does.
func linkPeers(inv []Device, devs []simDevice) {
	for i := range inv {
		if devs[i].model.nvlinkKiBps == 0 {
			continue
		}
		for j := range inv {
			if j != i && devs[j].model.key == devs[i].model.key {
				inv[i].NVLinkPeers = append(inv[i].NVLinkPeers, Peer{Index: j, UUID: inv[j].UUID})
			}
		}
	}
}

// seededUUID formats the SHA-256 of seed and key as a UUID.
func seededUUID(seed, key string) string {
	h := sha256.Sum256([]byte(seed + "\x00" + key))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Simulated reports true.
func (s *Simulated) Simulated() bool { return true }

// Close stops the source; later calls return ErrClosed.
func (s *Simulated) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Discover returns the simulated inventory.
func (s *Simulated) Discover(ctx context.Context) (Inventory, error) {
	if err := ctx.Err(); err != nil {
		return Inventory{}, fmt.Errorf("discover simulated GPUs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Inventory{}, fmt.Errorf("discover simulated GPUs: %w", ErrClosed)
	}
	return s.inv.clone(), nil
}

// SetLoad sets how busy the GPU with this UUID is, from 0 (idle) to 1 (flat
// out). Utilisation follows at once, as do power, SM clock and NVLink and PCIe
// traffic; temperature follows with a time constant of one minute.
func (s *Simulated) SetLoad(uuid string, load float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	i, ok := s.gpuIndex(uuid)
	if !ok {
		return fmt.Errorf("set simulated load: no simulated GPU has UUID %q", uuid)
	}
	if !(load >= 0 && load <= 1) {
		return fmt.Errorf("set simulated load of %s: load %v must be between 0 and 1", uuid, load)
	}
	s.advance(s.now().UTC())
	s.devs[i].load = load
	return nil
}

// SetProcessMemory records that process pid holds usedMiB of GPU memory on the
// GPU or MIG instance with this UUID, replacing what it held there before. A GPU
// in MIG mode takes its MIG instances' UUIDs, as CUDA does. Like a real device,
// it refuses more memory than it has.
func (s *Simulated) SetProcessMemory(uuid string, pid int, usedMiB int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if pid <= 0 {
		return fmt.Errorf("set simulated process memory: pid %d must be positive", pid)
	}
	if usedMiB < 0 {
		return fmt.Errorf("set simulated process memory of pid %d: used MiB %d must not be negative", pid, usedMiB)
	}
	device, migUUID, capacity, err := s.memoryHolder(uuid)
	if err != nil {
		return fmt.Errorf("set simulated process memory of pid %d: %w", pid, err)
	}
	others := int64(0)
	for _, p := range s.procs {
		if p.device == device && p.migUUID == migUUID && p.pid != pid {
			others += p.usedMiB
		}
	}
	if others+usedMiB > capacity {
		return fmt.Errorf("set simulated process memory of pid %d: %s would hold %d MiB of its %d MiB", pid, uuid, others+usedMiB, capacity)
	}
	s.procs = slices.DeleteFunc(s.procs, func(p simProcess) bool {
		return p.pid == pid && p.device == device && p.migUUID == migUUID
	})
	s.procs = append(s.procs, simProcess{pid: pid, device: device, migUUID: migUUID, usedMiB: usedMiB})
	return nil
}

// memoryHolder resolves a GPU or MIG UUID to its device, MIG UUID and memory.
func (s *Simulated) memoryHolder(uuid string) (device int, migUUID string, capacityMiB int64, err error) {
	for _, d := range s.inv.Devices {
		if d.UUID == uuid {
			if d.MIG == MIGEnabled {
				return 0, "", 0, fmt.Errorf("GPU %s is in MIG mode; use the UUID of one of its MIG instances", uuid)
			}
			return d.Index, "", d.MemoryMiB, nil
		}
		for _, mi := range d.MIGInstances {
			if mi.UUID == uuid {
				return d.Index, mi.UUID, mi.MemoryMiB, nil
			}
		}
	}
	return 0, "", 0, fmt.Errorf("no simulated GPU or MIG instance has UUID %q", uuid)
}

// RemoveProcess forgets process pid on every device, as when it exits.
func (s *Simulated) RemoveProcess(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = slices.DeleteFunc(s.procs, func(p simProcess) bool { return p.pid == pid })
}

// InjectXID raises XID error xid on the GPU with this UUID; the next Sample
// reports it. XID 48, an uncorrectable ECC error, also counts one in ECC.
func (s *Simulated) InjectXID(uuid string, xid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	i, ok := s.gpuIndex(uuid)
	if !ok {
		return fmt.Errorf("inject simulated XID: no simulated GPU has UUID %q", uuid)
	}
	if xid <= 0 {
		return fmt.Errorf("inject simulated XID on %s: XID %d must be positive", uuid, xid)
	}
	s.devs[i].xids = append(s.devs[i].xids, xid)
	if xid == xidDoubleBitECC {
		s.devs[i].eccUncorrected++
	}
	return nil
}

func (s *Simulated) gpuIndex(uuid string) (int, bool) {
	for _, d := range s.inv.Devices {
		if d.UUID == uuid {
			return d.Index, true
		}
	}
	return 0, false
}

// advance brings every temperature up to now: an exponential approach to the
// temperature of the current load. A clock that steps back changes nothing.
func (s *Simulated) advance(now time.Time) {
	for i := range s.devs {
		d := &s.devs[i]
		dt := now.Sub(d.at)
		if dt <= 0 {
			continue
		}
		target := d.model.idleC + d.load*(d.model.hotC-d.model.idleC)
		d.tempC += (target - d.tempC) * (1 - math.Exp(-dt.Seconds()/thermalTau.Seconds()))
		d.at = now
	}
}

// Sample reads every simulated device at the clock's current time.
func (s *Simulated) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, fmt.Errorf("sample simulated GPUs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Sample{}, fmt.Errorf("sample simulated GPUs: %w", ErrClosed)
	}
	now := s.now().UTC()
	s.advance(now)
	out := Sample{Time: now, Simulated: true, Devices: make([]DeviceSample, len(s.devs))}
	for i := range s.devs {
		out.Devices[i] = s.sampleDevice(i)
		s.devs[i].xids = nil
	}
	return out, nil
}

func (s *Simulated) sampleDevice(i int) DeviceSample {
	d, inv := s.devs[i], s.inv.Devices[i]
	m := d.model
	ds := DeviceSample{
		Index:          i,
		UUID:           inv.UUID,
		MemoryUsedMiB:  ptr(int64(0)),
		TemperatureC:   ptr(int(math.Round(d.tempC))),
		PowerW:         ptr(math.Round((m.idleW+d.load*(m.maxW-m.idleW))*10) / 10),
		SMClockMHz:     ptr(m.idleSMMHz + int(math.Round(d.load*float64(m.maxSMMHz-m.idleSMMHz)))),
		PCIeTxKiBps:    ptr(int64(math.Round(d.load * 0.05 * float64(m.pcieKiBps)))),
		PCIeRxKiBps:    ptr(int64(math.Round(d.load * 0.2 * float64(m.pcieKiBps)))),
		ECCCorrected:   ptr(int64(0)),
		ECCUncorrected: ptr(d.eccUncorrected),
		XIDs:           d.xids,
	}
	// NVML has no whole-GPU utilisation in MIG mode; neither does the simulation.
	if inv.MIG != MIGEnabled {
		ds.UtilizationPct = ptr(int(math.Round(d.load * 100)))
	}
	if len(inv.NVLinkPeers) > 0 {
		// Collective traffic is symmetric: as much in as out.
		kibps := int64(math.Round(d.load * 0.5 * float64(m.nvlinkKiBps)))
		ds.NVLinkTxKiBps, ds.NVLinkRxKiBps = ptr(kibps), ptr(kibps)
	}
	for _, mi := range inv.MIGInstances {
		ds.MIG = append(ds.MIG, MIGSample{UUID: mi.UUID, MemoryUsedMiB: ptr(int64(0))})
	}
	for _, p := range s.sortedProcs() {
		if p.device != i {
			continue
		}
		*ds.MemoryUsedMiB += p.usedMiB
		for k := range ds.MIG {
			if ds.MIG[k].UUID == p.migUUID {
				*ds.MIG[k].MemoryUsedMiB += p.usedMiB
			}
		}
		ds.Processes = append(ds.Processes, s.usage(p))
	}
	return ds
}

// ProcessMemory lists the simulated processes by device, then pid.
func (s *Simulated) ProcessMemory(ctx context.Context) ([]ProcessUsage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read simulated process memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("read simulated process memory: %w", ErrClosed)
	}
	var out []ProcessUsage
	for _, p := range s.sortedProcs() {
		out = append(out, s.usage(p))
	}
	return out, nil
}

func (s *Simulated) sortedProcs() []simProcess {
	sorted := slices.Clone(s.procs)
	slices.SortFunc(sorted, func(a, b simProcess) int {
		if a.device != b.device {
			return a.device - b.device
		}
		if a.pid != b.pid {
			return a.pid - b.pid
		}
		return strings.Compare(a.migUUID, b.migUUID)
	})
	return sorted
}

func (s *Simulated) usage(p simProcess) ProcessUsage {
	return ProcessUsage{
		PID:         p.pid,
		DeviceIndex: p.device,
		DeviceUUID:  s.inv.Devices[p.device].UUID,
		MIGUUID:     p.migUUID,
		UsedMiB:     ptr(p.usedMiB),
	}
}

// clone copies the inventory deeply, so a caller cannot change the source's.
func (inv Inventory) clone() Inventory {
	out := inv
	out.Devices = slices.Clone(inv.Devices)
	for i := range out.Devices {
		out.Devices[i].MIGInstances = slices.Clone(inv.Devices[i].MIGInstances)
		out.Devices[i].NVLinkPeers = slices.Clone(inv.Devices[i].NVLinkPeers)
	}
	return out
}
