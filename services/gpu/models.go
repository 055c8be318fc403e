package gpu

import (
	"fmt"
	"math"
	"strings"
)

// model is what Gantry knows about a GPU model: how NVML names it, and the
// figures the simulator needs to behave like it.
type model struct {
	key       string // Gantry's model key, e.g. "A100-80GB"
	family    string // the token that identifies it in an NVML name
	nvmlName  string
	memoryMiB int64 // as NVML reports the total
	// nvlinkKiBps is the peak NVLink throughput per direction; 0 for PCIe boards.
	nvlinkKiBps int64
	pcieKiBps   int64 // peak PCIe throughput per direction
	idleW, maxW float64
	idleC, hotC float64 // temperature idle and at full load
	idleSMMHz   int
	maxSMMHz    int
	mig         []migProfile // nil where the model has no MIG
}

// migProfile is one MIG profile of a model, as `nvidia-smi mig -lgip` lists it.
type migProfile struct {
	name      string
	slices    int
	memoryMiB int64
}

const gib = 1 << 20 // KiB in one GiB

var a100x40MIG = []migProfile{
	{"1g.5gb", 1, 4864}, {"1g.10gb", 1, 9856}, {"2g.10gb", 2, 9856},
	{"3g.20gb", 3, 19968}, {"4g.20gb", 4, 19968}, {"7g.40gb", 7, 40192},
}

var a100x80MIG = []migProfile{
	{"1g.10gb", 1, 9728}, {"1g.20gb", 1, 19968}, {"2g.20gb", 2, 19968},
	{"3g.40gb", 3, 40192}, {"4g.40gb", 4, 40192}, {"7g.80gb", 7, 80896},
}

var h100x80MIG = []migProfile{
	{"1g.10gb", 1, 9984}, {"1g.20gb", 1, 20096}, {"2g.20gb", 2, 20096},
	{"3g.40gb", 3, 40448}, {"4g.40gb", 4, 40448}, {"7g.80gb", 7, 81152},
}

var h200x141MIG = []migProfile{
	{"1g.18gb", 1, 16384}, {"1g.35gb", 1, 32768}, {"2g.35gb", 2, 32768},
	{"3g.71gb", 3, 69632}, {"4g.71gb", 4, 69632}, {"7g.141gb", 7, 139776},
}

// models is the table of known models, in the order error messages list them.
// Families that prefix others (A10 and A100, L4 and L40S) are told apart by
// whole-token matching in modelKey.
var models = []model{
	{key: "A100-40GB", family: "A100", nvmlName: "NVIDIA A100-SXM4-40GB", memoryMiB: 40960,
		nvlinkKiBps: 300 * gib, pcieKiBps: 25 * gib, idleW: 55, maxW: 400, idleC: 32, hotC: 72,
		idleSMMHz: 210, maxSMMHz: 1410, mig: a100x40MIG},
	{key: "A100-80GB", family: "A100", nvmlName: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920,
		nvlinkKiBps: 300 * gib, pcieKiBps: 25 * gib, idleW: 60, maxW: 400, idleC: 32, hotC: 72,
		idleSMMHz: 210, maxSMMHz: 1410, mig: a100x80MIG},
	{key: "H100-80GB", family: "H100", nvmlName: "NVIDIA H100 80GB HBM3", memoryMiB: 81559,
		nvlinkKiBps: 450 * gib, pcieKiBps: 50 * gib, idleW: 70, maxW: 700, idleC: 33, hotC: 75,
		idleSMMHz: 345, maxSMMHz: 1980, mig: h100x80MIG},
	{key: "H200-141GB", family: "H200", nvmlName: "NVIDIA H200", memoryMiB: 143771,
		nvlinkKiBps: 450 * gib, pcieKiBps: 50 * gib, idleW: 75, maxW: 700, idleC: 33, hotC: 75,
		idleSMMHz: 345, maxSMMHz: 1980, mig: h200x141MIG},
	{key: "L4-24GB", family: "L4", nvmlName: "NVIDIA L4", memoryMiB: 23034,
		pcieKiBps: 25 * gib, idleW: 16, maxW: 72, idleC: 30, hotC: 70,
		idleSMMHz: 210, maxSMMHz: 2040},
	{key: "T4-16GB", family: "T4", nvmlName: "Tesla T4", memoryMiB: 15360,
		pcieKiBps: 12 * gib, idleW: 10, maxW: 70, idleC: 30, hotC: 68,
		idleSMMHz: 300, maxSMMHz: 1590},
	{key: "V100-16GB", family: "V100", nvmlName: "Tesla V100-SXM2-16GB", memoryMiB: 16160,
		nvlinkKiBps: 150 * gib, pcieKiBps: 12 * gib, idleW: 40, maxW: 300, idleC: 31, hotC: 74,
		idleSMMHz: 135, maxSMMHz: 1530},
	{key: "V100-32GB", family: "V100", nvmlName: "Tesla V100-SXM2-32GB", memoryMiB: 32510,
		nvlinkKiBps: 150 * gib, pcieKiBps: 12 * gib, idleW: 40, maxW: 300, idleC: 31, hotC: 74,
		idleSMMHz: 135, maxSMMHz: 1530},
	{key: "A10-24GB", family: "A10", nvmlName: "NVIDIA A10", memoryMiB: 23028,
		pcieKiBps: 25 * gib, idleW: 20, maxW: 150, idleC: 30, hotC: 70,
		idleSMMHz: 210, maxSMMHz: 1695},
	{key: "L40S-48GB", family: "L40S", nvmlName: "NVIDIA L40S", memoryMiB: 46068,
		pcieKiBps: 25 * gib, idleW: 35, maxW: 350, idleC: 30, hotC: 72,
		idleSMMHz: 210, maxSMMHz: 2520},
}

// KnownModels lists Gantry's model keys, e.g. "A100-80GB", the names that
// simulated-GPU specs, job requests and rate cards use.
func KnownModels() []string {
	keys := make([]string, len(models))
	for i, m := range models {
		keys[i] = m.key
	}
	return keys
}

// ModelMemoryMiB is the memory of a known model (by key, ignoring case), as NVML
// reports it; false for a model Gantry does not know.
func ModelMemoryMiB(key string) (int64, bool) {
	m, ok := modelByKey(key)
	return m.memoryMiB, ok
}

// modelByKey finds a model by its key, ignoring case.
func modelByKey(key string) (model, bool) {
	for _, m := range models {
		if strings.EqualFold(m.key, key) {
			return m, true
		}
	}
	return model{}, false
}

// modelKey maps an NVML device name and memory size to Gantry's model key: the
// known model of the same family whose memory is within 10% of the device's.
// Anything else (a new family, or a variant such as the 94 GB H100 NVL) keeps
// its NVML name without the vendor prefix, so it is never priced as another model.
func modelKey(name string, memoryMiB int64) string {
	tokens := strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' })
	best, bestGap := "", math.Inf(1)
	for _, m := range models {
		if !containsToken(tokens, m.family) {
			continue
		}
		gap := math.Abs(float64(memoryMiB-m.memoryMiB)) / float64(m.memoryMiB)
		if gap <= 0.10 && gap < bestGap {
			best, bestGap = m.key, gap
		}
	}
	if best != "" {
		return best
	}
	return stripVendor(name)
}

func containsToken(tokens []string, want string) bool {
	for _, t := range tokens {
		if strings.EqualFold(t, want) {
			return true
		}
	}
	return false
}

// stripVendor drops the words before the model in names such as "NVIDIA B200",
// "Tesla T4" or the go-nvml mock's "Mock NVIDIA A100-SXM4-40GB".
func stripVendor(name string) string {
	rest := strings.TrimSpace(name)
	for {
		word, after, found := strings.Cut(rest, " ")
		if !found {
			return rest
		}
		switch strings.ToUpper(word) {
		case "SIMULATED", "MOCK", "NVIDIA", "TESLA":
			rest = strings.TrimSpace(after)
		default:
			return rest
		}
	}
}

// migProfileName names a MIG device the way NVML and nvidia-smi do (the
// algorithm of NVIDIA's go-nvlib): memory is rounded up to eighths of the card,
// then scaled to the card's size in whole GiB. A compute instance smaller than
// its GPU instance gets a "Nc." prefix.
func migProfileName(giSlices, ciSlices int, memoryMiB, deviceMemoryMiB int64) string {
	const eighths = 8
	fraction := math.Ceil(float64(memoryMiB)/float64(deviceMemoryMiB)*eighths) / eighths
	deviceGiB := float64((deviceMemoryMiB + 1023) / 1024)
	gb := int64(math.Round(fraction * deviceGiB))
	name := fmt.Sprintf("%dg.%dgb", giSlices, gb)
	if ciSlices > 0 && ciSlices < giSlices {
		name = fmt.Sprintf("%dc.%s", ciSlices, name)
	}
	return name
}
