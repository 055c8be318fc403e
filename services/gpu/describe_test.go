package gpu

import (
	"strings"
	"testing"
	"time"
)

func TestDescribeSimulated(t *testing.T) {
	s, clock := newSim(t, "2xA100-40GB:mig=3g.20gb+2g.10gb,1xL4-24GB")
	inv := discover(t, s)
	mig := inv.Devices[0].MIGInstances[0].UUID
	if err := s.SetProcessMemory(mig, 4242, 1500); err != nil {
		t.Fatalf("SetProcessMemory: %v", err)
	}
	if err := s.SetLoad(inv.Devices[2].UUID, 0.25); err != nil {
		t.Fatalf("SetLoad: %v", err)
	}
	if err := s.InjectXID(inv.Devices[2].UUID, 79); err != nil {
		t.Fatalf("InjectXID: %v", err)
	}
	clock.Advance(time.Second)
	out := Describe(inv, sample(t, s))
	want := []string{
		"*** SIMULATED GPUs: not hardware ***",
		"NVIDIA driver 550.54.15, CUDA 12.4, confidential computing off",
		"3 GPU(s), sampled at 2026-03-01T12:00:01Z",
		"GPU 0: SIMULATED NVIDIA A100-SXM4-40GB [A100-40GB]",
		"UUID " + inv.Devices[0].UUID + ", 40960 MiB, PCI 00000000:10:00.0, XID events watched",
		"MIG enabled\n    3g.20gb " + mig + ", 19968 MiB (GPU instance 1, compute instance 0)",
		"NVLink peers: 1\n",
		"utilisation n/a, memory used 1500 of 40960 MiB", // no utilisation in MIG mode
		"MIG " + mig + ": memory used 1500 MiB",
		"process 4242: 1500 MiB in " + mig,
		"GPU 2: SIMULATED NVIDIA L4 [L4-24GB]",
		"MIG unsupported\n  NVLink peers: none",
		"utilisation 25%, memory used 0 of 23034 MiB, temperature 30 C, power 30.0 W, SM clock 668 MHz",
		"NVLink tx n/a rx n/a, PCIe tx 327680 KiB/s rx 1310720 KiB/s, ECC corrected 0 uncorrected 0, XIDs 79",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
}

func TestDescribeHardwareWithGaps(t *testing.T) {
	inv := Inventory{DriverVersion: "550.54.15", ConfidentialCompute: CCUnknown, Devices: []Device{
		{Index: 0, UUID: "GPU-1", Name: "NVIDIA H100 80GB HBM3", Model: "H100-80GB", MemoryMiB: 81559, MIG: MIGDisabled},
		{Index: 1, UUID: "GPU-2", Name: "NVIDIA H100 80GB HBM3", Model: "H100-80GB", MemoryMiB: 81559, MIG: MIGDisabled},
	}}
	smp := Sample{Devices: []DeviceSample{
		{Index: 0, UUID: "GPU-1", TemperatureC: ptr(41), Error: "read power: ERROR_GPU_IS_LOST",
			Processes: []ProcessUsage{{PID: 9, DeviceIndex: 0, DeviceUUID: "GPU-1"}}},
	}}
	out := Describe(inv, smp)
	if strings.Contains(out, "SIMULATED") {
		t.Errorf("hardware report says SIMULATED:\n%s", out)
	}
	want := []string{
		"NVIDIA driver 550.54.15, CUDA n/a, confidential computing unknown\n2 GPU(s)\n",
		"PCI n/a, XID events not watched",
		"utilisation n/a, memory used n/a of 81559 MiB, temperature 41 C, power n/a, SM clock n/a",
		"process 9: n/a\n",
		"error: read power: ERROR_GPU_IS_LOST",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	if gpu1 := out[strings.Index(out, "GPU 1:"):]; strings.Contains(gpu1, "utilisation") {
		t.Errorf("GPU 1 has no sample but its report shows one:\n%s", gpu1)
	}
}
