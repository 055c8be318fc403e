package gpu

import (
	"slices"
	"testing"
)

func TestModelKey(t *testing.T) {
	tests := []struct {
		name      string
		memoryMiB int64
		want      string
	}{
		{"NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},
		{"NVIDIA H100 PCIe", 81559, "H100-80GB"},
		{"NVIDIA H100 NVL", 95830, "H100 NVL"}, // 94 GB: not priced as an 80 GB card
		{"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"Mock NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"NVIDIA A100 80GB PCIe", 81920, "A100-80GB"},
		{"NVIDIA A10", 23028, "A10-24GB"},
		{"NVIDIA L4", 23034, "L4-24GB"},
		{"NVIDIA L40S", 46068, "L40S-48GB"},
		{"NVIDIA H200", 143771, "H200-141GB"},
		{"Tesla T4", 15360, "T4-16GB"},
		{"Tesla V100-SXM2-16GB", 16160, "V100-16GB"},
		{"Tesla V100-PCIE-32GB", 32510, "V100-32GB"},
		{"SIMULATED NVIDIA L4", 23034, "L4-24GB"},
		{"NVIDIA B200", 183359, "B200"},
		{"NVIDIA GeForce RTX 4090", 24564, "GeForce RTX 4090"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := modelKey(tt.name, tt.memoryMiB); got != tt.want {
			t.Errorf("modelKey(%q, %d) = %q, want %q", tt.name, tt.memoryMiB, got, tt.want)
		}
	}
}

// TestModelTableNamesItself checks the model table against the functions
// that read real devices: every model's NVML name maps back to its key, and
// every MIG profile's memory is named as NVML would name it.
func TestModelTableNamesItself(t *testing.T) {
	for _, m := range models {
		if got := modelKey(m.nvmlName, m.memoryMiB); got != m.key {
			t.Errorf("modelKey(%q) = %q, want %q", m.nvmlName, got, m.key)
		}
		for _, p := range m.mig {
			if got := migProfileName(p.slices, p.slices, p.memoryMiB, m.memoryMiB); got != p.name {
				t.Errorf("%s: profile with %d slices and %d MiB is named %q, table says %q", m.key, p.slices, p.memoryMiB, got, p.name)
			}
		}
	}
}

func TestMIGProfileName(t *testing.T) {
	tests := []struct {
		gi, ci           int
		memMiB, totalMiB int64
		want             string
	}{
		{1, 1, 4864, 40960, "1g.5gb"},
		{3, 3, 19968, 40960, "3g.20gb"},
		{7, 7, 40192, 40960, "7g.40gb"},
		{1, 1, 6000, 40960, "1g.10gb"}, // just over an eighth of the card: rounds up
		{1, 1, 9856, 81559, "1g.10gb"},
		{3, 1, 40448, 81559, "1c.3g.40gb"},
		{3, 2, 40960, 81920, "2c.3g.40gb"},
		{4, 4, 40960, 81920, "4g.40gb"},
		{1, 1, 16384, 143771, "1g.18gb"},
		{3, 3, 69632, 143771, "3g.71gb"},
	}
	for _, tt := range tests {
		if got := migProfileName(tt.gi, tt.ci, tt.memMiB, tt.totalMiB); got != tt.want {
			t.Errorf("migProfileName(%d, %d, %d, %d) = %q, want %q", tt.gi, tt.ci, tt.memMiB, tt.totalMiB, got, tt.want)
		}
	}
}

func TestKnownModels(t *testing.T) {
	got := KnownModels()
	for _, want := range []string{"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "L4-24GB", "T4-16GB", "V100-16GB", "V100-32GB", "A10-24GB", "L40S-48GB"} {
		if !slices.Contains(got, want) {
			t.Errorf("KnownModels() = %v, lacks %s", got, want)
		}
	}
	got[0] = "changed"
	if KnownModels()[0] == "changed" {
		t.Error("KnownModels hands out the table itself")
	}
}

func TestModelMemoryMiB(t *testing.T) {
	if m, ok := ModelMemoryMiB("a100-80gb"); !ok || m != 81920 {
		t.Errorf("A100-80GB = %d, %v; want 81920 MiB", m, ok)
	}
	if m, ok := ModelMemoryMiB("B200"); ok || m != 0 {
		t.Errorf("an unknown model = %d, %v; want 0, false", m, ok)
	}
}
