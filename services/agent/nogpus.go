package agent

import (
	"context"
	"sync/atomic"

	"github.com/gantry-gpu/gantry/services/gpu"
)

// noGPUs is the GPU source of a node without an NVIDIA driver: CPU jobs only.
type noGPUs struct{ closed atomic.Bool }

// NoGPUs returns a GPU source that reports no devices.
func NoGPUs() gpu.Source { return &noGPUs{} }

func (n *noGPUs) Discover(context.Context) (gpu.Inventory, error) {
	if n.closed.Load() {
		return gpu.Inventory{}, gpu.ErrClosed
	}
	return gpu.Inventory{ConfidentialCompute: gpu.CCUnknown, Devices: []gpu.Device{}}, nil
}

func (n *noGPUs) Sample(context.Context) (gpu.Sample, error) {
	if n.closed.Load() {
		return gpu.Sample{}, gpu.ErrClosed
	}
	return gpu.Sample{Devices: []gpu.DeviceSample{}}, nil
}

func (n *noGPUs) ProcessMemory(context.Context) ([]gpu.ProcessUsage, error) {
	if n.closed.Load() {
		return nil, gpu.ErrClosed
	}
	return nil, nil
}

func (n *noGPUs) Simulated() bool { return false }

func (n *noGPUs) Close() error {
	n.closed.Store(true)
	return nil
}
