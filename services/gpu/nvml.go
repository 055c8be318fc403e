//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlSource reads real GPUs through NVML. One mutex serialises every call, so
// that Close cannot shut NVML down under a call in flight (a call after
// nvmlShutdown may crash the process).
type nvmlSource struct {
	lib     nvml.Interface
	now     func() time.Time
	devices []nvml.Device // by NVML index
	uuids   []string
	byUUID  map[string]int
	// events receives XID errors of the devices marked in xidWatched; nil when none is.
	events     nvml.EventSet
	xidWatched []bool

	mu     sync.Mutex
	closed bool
	nvlink []nvlinkReading // the previous NVLink counters, by device
}

// nvlinkReading is a device's cumulative NVLink counters at one time.
type nvlinkReading struct {
	txKiB, rxKiB uint64
	atMicros     int64 // NVML's timestamp of the reading
	valid        bool
}

var _ Source = (*nvmlSource)(nil)

// OpenNVML initialises NVML, opens every GPU and starts watching XID errors.
// Without an NVIDIA driver it returns an error matching ErrNoDriver. now stamps
// samples; pass time.Now.
func OpenNVML(now func() time.Time) (Source, error) {
	return openNVML(nvml.New(), now)
}

// openNVML is OpenNVML on any NVML implementation, such as go-nvml's mocks.
func openNVML(lib nvml.Interface, now func() time.Time) (*nvmlSource, error) {
	if now == nil {
		return nil, errors.New("open NVML: clock is required")
	}
	// Nothing but Init may be called before Init succeeds: go-nvml calls into
	// symbols that are not loaded, and the process dies.
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w: initialise NVML: %w", ErrNoDriver, ret)
	default:
		return nil, fmt.Errorf("initialise NVML: %w", ret)
	}
	s := &nvmlSource{lib: lib, now: now, byUUID: map[string]int{}}
	if err := s.openDevices(); err != nil {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("shut NVML down: %w", ret))
		}
		return nil, err
	}
	return s, nil
}

// openDevices takes a handle on every GPU and registers for their XID errors.
func (s *nvmlSource) openDevices() error {
	count, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("count GPUs: %w", ret)
	}
	for i := range count {
		dev, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("open GPU %d: %w", i, ret)
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("read UUID of GPU %d: %w", i, ret)
		}
		s.devices = append(s.devices, dev)
		s.uuids = append(s.uuids, uuid)
		s.byUUID[uuid] = i
	}
	s.nvlink = make([]nvlinkReading, count)
	s.xidWatched = make([]bool, count)
	return s.watchXIDs()
}

// watchXIDs registers every device that supports it for XID errors. A device
// or driver without event support is simply not watched.
func (s *nvmlSource) watchXIDs() error {
	set, ret := s.lib.EventSetCreate()
	if ok, err := present(ret, "create NVML event set"); !ok {
		return err
	}
	watched := false
	for i, dev := range s.devices {
		supported, ret := dev.GetSupportedEventTypes()
		ok, err := present(ret, fmt.Sprintf("read event types of GPU %d", i))
		if err == nil && ok && supported&nvml.EventTypeXidCriticalError != 0 {
			ok, err = present(dev.RegisterEvents(nvml.EventTypeXidCriticalError, set), fmt.Sprintf("watch XID errors of GPU %d", i))
			s.xidWatched[i] = ok
			watched = watched || ok
		}
		if err != nil {
			if ret := set.Free(); ret != nvml.SUCCESS {
				err = errors.Join(err, fmt.Errorf("free NVML event set: %w", ret))
			}
			return err
		}
	}
	if !watched {
		if ret := set.Free(); ret != nvml.SUCCESS {
			return fmt.Errorf("free NVML event set: %w", ret)
		}
		return nil
	}
	s.events = set
	return nil
}

// usable says why the source cannot answer, if it cannot. The caller holds s.mu.
func (s *nvmlSource) usable(ctx context.Context) error {
	if s.closed {
		return ErrClosed
	}
	return ctx.Err()
}

// Simulated reports false: these are real GPUs.
func (s *nvmlSource) Simulated() bool { return false }

// Close frees the event set and shuts NVML down.
func (s *nvmlSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.events != nil {
		if ret := s.events.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("free NVML event set: %w", ret))
		}
	}
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("shut NVML down: %w", ret))
	}
	return errors.Join(errs...)
}

// present reports whether NVML returned a value: false without error for
// NOT_SUPPORTED or a function the installed driver lacks, an error naming what
// was being read for any other failure.
func present(ret nvml.Return, what string) (bool, error) {
	switch ret {
	case nvml.SUCCESS:
		return true, nil
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return false, nil
	default:
		return false, fmt.Errorf("%s: %w", what, ret)
	}
}

// cString converts a NUL-terminated C char array.
func cString(chars []int8) string {
	b := make([]byte, 0, len(chars))
	for _, c := range chars {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func bytesToMiB(b uint64) int64 { return int64(b >> 20) }
