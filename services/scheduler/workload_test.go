package scheduler

import (
	"math"
	"testing"
)

func TestWorkloadFromRequests(t *testing.T) {
	var reqs []Request
	add := func(n int, r Request) {
		for i := 0; i < n; i++ {
			reqs = append(reqs, r)
		}
	}
	add(50, Request{GPUs: 1, CPUMilli: 8000})
	add(30, Request{GPUs: 1, GPUMilli: 500, CPUMilli: 4000})
	add(16, Request{CPUMilli: 2000, RAMMiB: 100})
	add(16, Request{CPUMilli: 2000, RAMMiB: 200}) // RAM is not part of a shape
	add(3, Request{GPUs: 8, GPUModels: []string{"H100"}, CPUMilli: 64000})
	add(5, Request{MIGProfile: "1g.5gb"}) // MIG requests are left out

	w := WorkloadFromRequests(reqs)
	// 115 requests count, MIG aside; rare shapes stay, most frequent first.
	want := []Shape{
		{GPUs: 1, GPUMilli: 1000, CPUMilli: 8000, Weight: 50.0 / 115},
		{GPUs: 0, CPUMilli: 2000, Weight: 32.0 / 115},
		{GPUs: 1, GPUMilli: 500, CPUMilli: 4000, Weight: 30.0 / 115},
		{GPUs: 8, GPUMilli: 1000, CPUMilli: 64000, Weight: 3.0 / 115},
	}
	if len(w) != len(want) {
		t.Fatalf("workload %+v, want %+v", w, want)
	}
	for i := range want {
		g, e := w[i], want[i]
		if g.GPUs != e.GPUs || g.GPUMilli != e.GPUMilli || g.CPUMilli != e.CPUMilli || math.Abs(g.Weight-e.Weight) > 1e-12 {
			t.Errorf("shape %d = %+v, want %+v", i, g, e)
		}
	}
	if len(WorkloadFromRequests(nil)) != 0 {
		t.Fatal("workload of no requests is not empty")
	}
}
