package scheduler

import (
	"cmp"
	"slices"
	"strings"
)

// Shape is one typical request of the workload with its share of all requests.
type Shape struct {
	GPUs         int
	GPUMilli     int // per GPU: 1000 for whole GPUs
	GPUMemoryMiB int64
	GPUModels    []string
	CPUMilli     int64
	Weight       float64
}

// Workload is the observed distribution of request shapes that placement packs for.
type Workload []Shape

// workloadMaxShapes bounds the distinct shapes a workload keeps, most frequent first.
const workloadMaxShapes = 1024

// WorkloadFromRequests returns the distribution of request shapes, most frequent first
// (at most 1024 of them), weights normalised to 1. Rare shapes are kept: placement
// weighs them by how few nodes could host them (see packing). MIG requests are left
// out: MIG cards are sliced ahead of time and do not fragment the way shared cards do.
func WorkloadFromRequests(reqs []Request) Workload {
	type key struct {
		gpus   int
		milli  int
		mem    int64
		models string
		cpu    int64
	}
	counts := map[key]int{}
	total := 0
	for _, r := range reqs {
		if r.MIGProfile != "" {
			continue
		}
		k := key{gpus: r.GPUs, milli: perGPUMilli(r), mem: r.GPUMemoryMiB, models: strings.Join(r.GPUModels, "|"), cpu: r.CPUMilli}
		if r.GPUs == 0 {
			k.milli, k.mem, k.models = 0, 0, ""
		}
		counts[k]++
		total++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	// Most frequent first; ties broken by the key, descending, so the result is stable.
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(
			cmp.Compare(counts[b], counts[a]),
			cmp.Compare(b.cpu, a.cpu),
			cmp.Compare(b.milli, a.milli),
			cmp.Compare(b.gpus, a.gpus),
			strings.Compare(b.models, a.models),
			cmp.Compare(b.mem, a.mem),
		)
	})
	var w Workload
	sum := 0.0
	for _, k := range keys {
		if len(w) == workloadMaxShapes {
			break
		}
		s := Shape{GPUs: k.gpus, GPUMilli: k.milli, GPUMemoryMiB: k.mem, CPUMilli: k.cpu, Weight: float64(counts[k]) / float64(total)}
		if k.models != "" {
			s.GPUModels = strings.Split(k.models, "|")
		}
		sum += s.Weight
		w = append(w, s)
	}
	for i := range w {
		w[i].Weight /= sum
	}
	return w
}

// perGPUMilli is the request's share of each GPU it uses: 1000 for whole GPUs.
func perGPUMilli(r Request) int {
	switch {
	case r.GPUs == 0:
		return 0
	case r.GPUMilli > 0 && r.GPUMilli < 1000:
		return r.GPUMilli
	}
	return 1000
}

// defaultWorkload stands in until a cluster has history or a queue: whole GPUs in the
// usual powers of two and common shares.
func defaultWorkload() Workload {
	return Workload{
		{GPUs: 1, GPUMilli: 1000, Weight: 0.4},
		{GPUs: 2, GPUMilli: 1000, Weight: 0.1},
		{GPUs: 4, GPUMilli: 1000, Weight: 0.1},
		{GPUs: 8, GPUMilli: 1000, Weight: 0.1},
		{GPUs: 1, GPUMilli: 500, Weight: 0.15},
		{GPUs: 1, GPUMilli: 250, Weight: 0.15},
	}
}
