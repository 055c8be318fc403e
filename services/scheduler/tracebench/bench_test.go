package tracebench

import (
	"runtime"
	"testing"
	"time"
)

// benchReplay replays one seed of the default trace under a policy and returns each
// decision's wall time and the CPU time of the thread that made it. On a machine shared
// with other work a decision's wall time includes the time the thread waited for a CPU;
// its thread CPU time does not.
func benchReplay(b *testing.B, w *Workload, pol Policy) (wall, cpu []int64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := newSimCluster(w)
	decide, err := pol.start(w, c)
	if err != nil {
		b.Fatal(err)
	}
	for k := range w.Arrivals {
		p := &w.Arrivals[k]
		t := time.Now()
		u0, _ := threadCPU()
		node, gpus, ok := decide(p)
		u1, _ := threadCPU()
		cpu = append(cpu, int64(u1-u0))
		wall = append(wall, time.Since(t).Nanoseconds())
		if ok {
			if err := c.bind(node, gpus, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	return wall, cpu
}

// BenchmarkPlaceTrace measures Gantry's per-pod placement (Scheduler.Place, then
// Cluster.Assume) on the 1,213-node trace cluster over one seed of the default trace,
// against the in-run first-fit baseline on the same arrivals.
func BenchmarkPlaceTrace(b *testing.B) {
	nodes, pods := loadTrace(b, "default")
	w := BuildWorkload(nodes, pods, 1.3, 42)
	pols, err := SelectPolicies("gantry,firstfit")
	if err != nil {
		b.Fatal(err)
	}
	var gantry, gantryCPU, firstfit []int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wall, cpu := benchReplay(b, w, pols[0])
		gantry, gantryCPU = append(gantry, wall...), append(gantryCPU, cpu...)
	}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		wall, _ := benchReplay(b, w, pols[1])
		firstfit = append(firstfit, wall...)
	}
	sum := func(ns []int64) (s int64) {
		for _, v := range ns {
			s += v
		}
		return s
	}
	mean := float64(sum(gantry)) / float64(len(gantry))
	ffMean := float64(sum(firstfit)) / float64(len(firstfit))
	b.ReportMetric(1e9/mean, "pods/s")
	b.ReportMetric(float64(percentile99(gantry))/1e3, "p99-µs")
	b.ReportMetric(float64(percentile99(gantryCPU))/1e3, "p99-cpu-µs")
	b.ReportMetric(1e9*float64(len(gantryCPU))/float64(sum(gantryCPU)), "pods/cpu-s")
	b.ReportMetric(float64(percentile99(firstfit))/1e3, "firstfit-p99-µs")
	b.ReportMetric(mean/ffMean, "x-firstfit")
}
