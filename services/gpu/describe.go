package gpu

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe renders an inventory and a sample of the same node as a report for
// people, as `gantry agent --probe` prints it. Values a device did not report
// read "n/a".
func Describe(inv Inventory, s Sample) string {
	var b strings.Builder
	if inv.Simulated || s.Simulated {
		b.WriteString("*** SIMULATED GPUs: not hardware ***\n")
	}
	fmt.Fprintf(&b, "NVIDIA driver %s, CUDA %s, confidential computing %s\n",
		orNA(inv.DriverVersion), orNA(inv.CUDAVersion), orNA(string(inv.ConfidentialCompute)))
	fmt.Fprintf(&b, "%d GPU(s)", len(inv.Devices))
	if !s.Time.IsZero() {
		fmt.Fprintf(&b, ", sampled at %s", s.Time.UTC().Format(time.RFC3339))
	}
	b.WriteString("\n")
	samples := make(map[int]DeviceSample, len(s.Devices))
	for _, ds := range s.Devices {
		samples[ds.Index] = ds
	}
	for _, d := range inv.Devices {
		ds, sampled := samples[d.Index]
		describeDevice(&b, d)
		if sampled {
			describeSample(&b, d, ds)
		}
	}
	return b.String()
}

func describeDevice(b *strings.Builder, d Device) {
	fmt.Fprintf(b, "\nGPU %d: %s [%s]\n", d.Index, d.Name, d.Model)
	fmt.Fprintf(b, "  UUID %s, %d MiB, PCI %s, XID events %s\n",
		d.UUID, d.MemoryMiB, orNA(d.PCIBusID), watched(d.XIDEvents))
	fmt.Fprintf(b, "  MIG %s", d.MIG)
	for _, mi := range d.MIGInstances {
		fmt.Fprintf(b, "\n    %s %s, %d MiB (GPU instance %d, compute instance %d)",
			mi.Profile, mi.UUID, mi.MemoryMiB, mi.GPUInstanceID, mi.ComputeInstanceID)
	}
	b.WriteString("\n  NVLink peers: ")
	if len(d.NVLinkPeers) == 0 {
		b.WriteString("none")
	}
	for i, p := range d.NVLinkPeers {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(p.Index))
	}
	b.WriteString("\n")
}

func describeSample(b *strings.Builder, d Device, ds DeviceSample) {
	fmt.Fprintf(b, "  utilisation %s, memory used %s of %d MiB, temperature %s, power %s, SM clock %s\n",
		na(ds.UtilizationPct, "%d%%"), na(ds.MemoryUsedMiB, "%d"), d.MemoryMiB,
		na(ds.TemperatureC, "%d C"), na(ds.PowerW, "%.1f W"), na(ds.SMClockMHz, "%d MHz"))
	fmt.Fprintf(b, "  NVLink tx %s rx %s, PCIe tx %s rx %s, ECC corrected %s uncorrected %s, XIDs %s\n",
		na(ds.NVLinkTxKiBps, "%d KiB/s"), na(ds.NVLinkRxKiBps, "%d KiB/s"),
		na(ds.PCIeTxKiBps, "%d KiB/s"), na(ds.PCIeRxKiBps, "%d KiB/s"),
		na(ds.ECCCorrected, "%d"), na(ds.ECCUncorrected, "%d"), xidList(ds.XIDs))
	for _, m := range ds.MIG {
		fmt.Fprintf(b, "  MIG %s: memory used %s\n", m.UUID, na(m.MemoryUsedMiB, "%d MiB"))
	}
	for _, p := range ds.Processes {
		fmt.Fprintf(b, "  process %d: %s", p.PID, na(p.UsedMiB, "%d MiB"))
		if p.MIGUUID != "" {
			fmt.Fprintf(b, " in %s", p.MIGUUID)
		}
		b.WriteString("\n")
	}
	if ds.Error != "" {
		fmt.Fprintf(b, "  error: %s\n", ds.Error)
	}
}

func watched(on bool) string {
	if on {
		return "watched"
	}
	return "not watched"
}

func xidList(xids []int) string {
	if len(xids) == 0 {
		return "none"
	}
	parts := make([]string, len(xids))
	for i, x := range xids {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

func na[T any](v *T, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}
