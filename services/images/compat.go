package images

import (
	"fmt"
	"strconv"
	"strings"
)

// Compatibility levels of an image on a node's driver.
const (
	CompatFull    = "full"    // the driver is at least the toolkit's own minimum
	CompatMinor   = "minor"   // runs through CUDA minor-version compatibility (no PTX JIT of newer code)
	CompatNone    = "none"    // the driver is too old
	CompatUnknown = "unknown" // the node reports no driver, or the image names no CUDA version
)

// toolkitDriver is the minimum Linux driver of each CUDA toolkit release
// (NVIDIA's CUDA release notes, "CUDA Toolkit and Corresponding Driver Versions").
var toolkitDriver = map[string]string{
	"11.0": "450.36.06", "11.1": "455.23", "11.2": "460.27.03", "11.3": "465.19.01",
	"11.4": "470.42.01", "11.5": "495.29.05", "11.6": "510.39.01", "11.7": "515.43.04",
	"11.8": "520.61.05", "12.0": "525.60.13", "12.1": "530.30.02", "12.2": "535.54.03",
	"12.3": "545.23.06", "12.4": "550.54.14", "12.5": "555.42.02", "12.6": "560.28.03",
	"12.8": "570.26", "12.9": "575.51.03",
}

// majorDriver is the minimum driver for minor-version compatibility within a CUDA major.
var majorDriver = map[string]string{"11": "450.80.02", "12": "525.60.13"}

// Compat says whether an image runs on a driver, and why.
type Compat struct {
	Level  string
	Reason string
}

// Runs reports whether the image can start on the driver at all.
func (c Compat) Runs() bool { return c.Level == CompatFull || c.Level == CompatMinor }

// Compatibility judges an image (its CUDA version and optional explicit minimum driver)
// against a node's driver version.
func Compatibility(cudaVersion, minDriver, nodeDriver string) Compat {
	if nodeDriver == "" {
		return Compat{CompatUnknown, "the node reports no NVIDIA driver"}
	}
	if minDriver != "" {
		if compareVersions(nodeDriver, minDriver) >= 0 {
			return Compat{CompatFull, fmt.Sprintf("driver %s ≥ the image's minimum %s", nodeDriver, minDriver)}
		}
		return Compat{CompatNone, fmt.Sprintf("driver %s < the image's minimum %s", nodeDriver, minDriver)}
	}
	if cudaVersion == "" {
		return Compat{CompatUnknown, "the image names no CUDA version"}
	}
	majorMinor := cudaVersion
	if parts := strings.SplitN(cudaVersion, ".", 3); len(parts) >= 2 {
		majorMinor = parts[0] + "." + parts[1]
	}
	if need, ok := toolkitDriver[majorMinor]; ok && compareVersions(nodeDriver, need) >= 0 {
		return Compat{CompatFull, fmt.Sprintf("driver %s ≥ %s, the minimum of CUDA %s", nodeDriver, need, majorMinor)}
	}
	major := strings.SplitN(majorMinor, ".", 2)[0]
	if need, ok := majorDriver[major]; ok && compareVersions(nodeDriver, need) >= 0 {
		return Compat{CompatMinor, fmt.Sprintf("driver %s runs CUDA %s through minor-version compatibility (≥ %s); code that needs PTX JIT may fail", nodeDriver, majorMinor, need)}
	}
	if need, ok := toolkitDriver[majorMinor]; ok {
		return Compat{CompatNone, fmt.Sprintf("driver %s < %s, the minimum of CUDA %s", nodeDriver, need, majorMinor)}
	}
	return Compat{CompatUnknown, fmt.Sprintf("CUDA %s is not in Gantry's driver table; set the image's minimum driver", cudaVersion)}
}

// compareVersions compares dotted numeric versions ("550.54.14" vs "525.60.13"); a
// missing or non-numeric part counts as 0.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
