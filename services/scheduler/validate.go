package scheduler

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// FieldError is bad input: the field at fault and what is allowed.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Limits of a request.
const (
	MaxGPUsPerReplica = 8
	MaxReplicas       = 1024
)

// Offer is the largest of everything the cluster has, to reject at submission what can
// never fit anywhere and to say what the cluster does have.
type Offer struct {
	MaxCPUMilli   int64
	MaxRAMMiB     int64
	MaxScratchMiB int64
	// GPUsByModel is the most GPUs of each model one node has (MIG cards excluded).
	GPUsByModel map[string]int
	// MemoryByModel is the largest card memory of each model.
	MemoryByModel map[string]int64
	// MIGProfiles lists the MIG profiles configured anywhere, with their models.
	MIGProfiles map[string][]string
	// NVLinkedByModel is the most whole GPUs of each model on one node joined by NVLink
	// each to every other (at most MaxGPUsPerReplica; models without NVLink are missing).
	NVLinkedByModel map[string]int
	Pools           map[string]bool
	HasSpot         bool
	// Plain and Containers say whether any node runs plain commands, container images.
	Plain, Containers bool
	Nodes             int
}

// OfferOf computes the cluster's offer from its nodes; cordoned nodes count, as they
// come back.
func OfferOf(nodes []Node) Offer {
	o := Offer{GPUsByModel: map[string]int{}, MemoryByModel: map[string]int64{}, MIGProfiles: map[string][]string{}, Pools: map[string]bool{},
		NVLinkedByModel: map[string]int{}}
	for _, n := range nodes {
		o.Nodes++
		o.MaxCPUMilli = max(o.MaxCPUMilli, n.CPUMilli)
		o.MaxRAMMiB = max(o.MaxRAMMiB, n.RAMMiB)
		o.MaxScratchMiB = max(o.MaxScratchMiB, n.ScratchMiB)
		o.Pools[n.Pool] = true
		o.HasSpot = o.HasSpot || n.Spot
		o.Plain = o.Plain || n.Runs.Starts(false)
		o.Containers = o.Containers || n.Runs.Starts(true)
		count := map[string]int{}
		for _, g := range n.GPUs {
			o.MemoryByModel[g.Model] = max(o.MemoryByModel[g.Model], g.MemoryMiB)
			if len(g.MIG) == 0 {
				count[g.Model]++
			}
			for _, s := range g.MIG {
				if !slices.Contains(o.MIGProfiles[s.Profile], g.Model) {
					o.MIGProfiles[s.Profile] = append(o.MIGProfiles[s.Profile], g.Model)
				}
			}
		}
		for m, k := range count {
			o.GPUsByModel[m] = max(o.GPUsByModel[m], k)
			if linked := mostLinked(n, m, o.NVLinkedByModel[m]); linked > 1 {
				o.NVLinkedByModel[m] = linked
			}
		}
	}
	return o
}

// mostLinked is the most whole GPUs of model on n joined by NVLink each to every other,
// when that is more than atLeast.
func mostLinked(n Node, model string, atLeast int) int {
	if atLeast >= MaxGPUsPerReplica || !slices.ContainsFunc(n.GPUs, func(g GPU) bool { return len(g.NVLinkPeers) > 0 }) {
		return atLeast
	}
	pos := map[int]int{}
	for j, g := range n.GPUs {
		pos[g.Index] = j
	}
	peers := make([]uint64, len(n.GPUs))
	var whole uint64
	for j, g := range n.GPUs {
		if len(g.MIG) > 0 || g.Model != model {
			continue
		}
		whole |= 1 << uint(j)
		for _, p := range g.NVLinkPeers {
			if q, ok := pos[p]; ok {
				peers[j] |= 1 << uint(q)
			}
		}
	}
	for k := min(bits.OnesCount64(whole), MaxGPUsPerReplica); k > max(atLeast, 1); k-- {
		if _, ok := linkedCards(func(p int) uint64 { return peers[p] & whole }, whole, k); ok {
			return k
		}
	}
	return atLeast
}

// ValidateRequest rejects a request that is malformed or can never fit anywhere in the
// cluster, with a *FieldError naming the field and the largest offer the cluster has.
func ValidateRequest(r Request, cfg Config, o Offer) error {
	if err := validateShape(r, cfg); err != nil {
		return err
	}
	fail := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Container && !o.Containers:
		return fail("image", "a container image needs a node with the docker or podman runtime, and every node runs plain commands only; use the plain-command image")
	case !r.Container && !o.Plain:
		return fail("image", "a plain command needs a node with the process runtime, and every node runs containers only; name a container image to run it in")
	}
	if r.CPUMilli > o.MaxCPUMilli {
		return fail("cpu_milli", "%d milli-cores exceed the largest node (%d milli-cores)", r.CPUMilli, o.MaxCPUMilli)
	}
	if r.RAMMiB > o.MaxRAMMiB {
		return fail("ram_mib", "%d MiB exceed the largest node (%d MiB)", r.RAMMiB, o.MaxRAMMiB)
	}
	if r.ScratchMiB > o.MaxScratchMiB {
		return fail("scratch_mib", "%d MiB exceed the largest node (%d MiB)", r.ScratchMiB, o.MaxScratchMiB)
	}
	if r.Pool != "" && !o.Pools[r.Pool] {
		return fail("pool", "pool %q does not exist; allowed: %s", r.Pool, sortedKeys(o.Pools))
	}
	for _, m := range r.GPUModels {
		_, whole := o.GPUsByModel[m]
		_, any := o.MemoryByModel[m]
		if !whole && !any {
			return fail("gpu_models", "model %q is not in the cluster; allowed: %s", m, sortedKeys(o.MemoryByModel))
		}
	}
	if r.MIGProfile != "" {
		models, ok := o.MIGProfiles[r.MIGProfile]
		if !ok {
			return fail("mig_profile", "no GPU offers MIG profile %q; offered: %s", r.MIGProfile, sortedKeys(o.MIGProfiles))
		}
		if len(r.GPUModels) > 0 && !slices.ContainsFunc(models, func(m string) bool { return slices.Contains(r.GPUModels, m) }) {
			return fail("mig_profile", "MIG profile %q exists only on %s, not on %s", r.MIGProfile, strings.Join(models, ", "), strings.Join(r.GPUModels, ", "))
		}
		return nil
	}
	if r.GPUs == 0 {
		return nil
	}
	// The best a single node offers for the models the request accepts.
	bestCount, bestMem, bestMemModel := 0, int64(0), ""
	for m, k := range o.GPUsByModel {
		if len(r.GPUModels) > 0 && !slices.Contains(r.GPUModels, m) {
			continue
		}
		if o.MemoryByModel[m] >= r.GPUMemoryMiB {
			bestCount = max(bestCount, k)
		}
		if o.MemoryByModel[m] > bestMem || (o.MemoryByModel[m] == bestMem && m < bestMemModel) {
			bestMem, bestMemModel = o.MemoryByModel[m], m
		}
	}
	if r.GPUMemoryMiB > bestMem {
		return fail("gpu_memory_mib", "%d MiB per GPU exceed the largest card that fits the request (%s with %d MiB)", r.GPUMemoryMiB, bestMemModel, bestMem)
	}
	if r.GPUs > bestCount {
		return fail("gpus", "%d GPUs per replica exceed the most any node has of a matching card (%d)", r.GPUs, bestCount)
	}
	if !r.NVLink {
		return nil
	}
	linked := 0
	for m, k := range o.NVLinkedByModel {
		if (len(r.GPUModels) == 0 || slices.Contains(r.GPUModels, m)) && o.MemoryByModel[m] >= r.GPUMemoryMiB {
			linked = max(linked, k)
		}
	}
	switch {
	case linked == 0:
		return fail("nvlink", "no node has matching GPUs joined by NVLink")
	case r.GPUs > linked:
		return fail("nvlink", "no node has %d matching GPUs joined by NVLink each to every other (the most: %d)", r.GPUs, linked)
	}
	return nil
}

// validateShape checks what is wrong with a request regardless of the cluster.
func validateShape(r Request, cfg Config) error {
	fail := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.GPUs < 0 || r.GPUs > MaxGPUsPerReplica:
		return fail("gpus", "%d is out of range; allowed: 0..%d per replica", r.GPUs, MaxGPUsPerReplica)
	case r.GPUMilli < 0 || r.GPUMilli > 1000:
		return fail("gpu_milli", "%d is out of range; allowed: 1..999 for a share of one GPU, or 0 for whole GPUs", r.GPUMilli)
	case r.GPUMilli > 0 && r.GPUMilli < 1000 && r.GPUs != 1:
		return fail("gpu_milli", "a share of a GPU (%d milli) needs gpus = 1, not %d", r.GPUMilli, r.GPUs)
	case r.GPUMemoryMiB < 0:
		return fail("gpu_memory_mib", "%d is negative", r.GPUMemoryMiB)
	case r.MIGProfile != "" && (r.GPUs > 1 || (r.GPUMilli > 0 && r.GPUMilli < 1000)):
		return fail("mig_profile", "a MIG slice is a device of its own; ask for gpus = 0 or 1 and no gpu_milli")
	case r.MIGProfile != "" && !validMIGProfile(r.MIGProfile):
		return fail("mig_profile", "%q is not a MIG profile; want the form 1g.10gb", r.MIGProfile)
	case r.NVLink && (r.GPUs < 2 || r.GPUMilli > 0 && r.GPUMilli < 1000 || r.MIGProfile != ""):
		return fail("nvlink", "NVLink joins two or more whole GPUs; ask for gpus = 2 or more, without a share or a MIG slice")
	case r.GPUs == 0 && r.MIGProfile == "" && (r.GPUMilli > 0 || r.GPUMemoryMiB > 0 || len(r.GPUModels) > 0):
		return fail("gpus", "0 GPUs, yet GPU share, memory or model given; ask for gpus = 1 or more")
	case r.CPUMilli < 0:
		return fail("cpu_milli", "%d is negative", r.CPUMilli)
	case r.RAMMiB < 0:
		return fail("ram_mib", "%d is negative", r.RAMMiB)
	case r.ScratchMiB < 0:
		return fail("scratch_mib", "%d is negative", r.ScratchMiB)
	case r.Replicas < 0 || r.Replicas > MaxReplicas:
		return fail("replicas", "%d is out of range; allowed: 1..%d", r.Replicas, MaxReplicas)
	case r.ExpectedRuntime < 0:
		return fail("expected_runtime", "%s is negative", r.ExpectedRuntime)
	case r.Kind != "" && r.Kind != KindTraining && r.Kind != KindInference && r.Kind != KindBatch:
		return fail("kind", "%q is unknown; allowed: training, inference, batch", r.Kind)
	}
	if _, ok := cfg.class(r.Class); !ok {
		return fail("class", "%q is not a priority class; allowed: %s", r.Class, cfg.classNames())
	}
	return nil
}

// validMIGProfile accepts NVML's profile names: "<n>g.<m>gb", optionally with a suffix
// such as "+me".
func validMIGProfile(p string) bool {
	g, rest, ok := strings.Cut(p, "g.")
	if !ok || g == "" || strings.Trim(g, "0123456789") != "" {
		return false
	}
	mem, _, _ := strings.Cut(rest, "+")
	return strings.HasSuffix(mem, "gb") && len(mem) > 2 && strings.Trim(mem[:len(mem)-2], "0123456789") == ""
}

func sortedKeys[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}
