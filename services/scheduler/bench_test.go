package scheduler

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"
)

// scaleSnapshot is the scale benchmark's input: nodes of 8 GPUs each (a mix of models),
// a quarter of them busy, and pending jobs shaped like the Alibaba trace's (whole GPUs,
// shares, CPU-only) in three classes and four teams.
func scaleSnapshot(nodes, pending int) Snapshot {
	rng := rand.New(rand.NewSource(1))
	snap := Snapshot{Now: t0}
	models := []struct {
		name string
		mem  int64
	}{{"A100", 81920}, {"H100", 81920}, {"L4", 24576}}
	for i := 0; i < nodes; i++ {
		m := models[i%len(models)]
		n := gpuNode(fmt.Sprintf("node-%05d", i), m.name, 8, m.mem, 128000, 1<<20)
		for g := range n.GPUs {
			n.GPUs[g].NVLinkPeers = []int{g ^ 1}
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	classes := []string{"production", "research", "test"}
	teams := []string{"ml", "cv", "nlp", "speech"}
	request := func() Request {
		r := Request{CPUMilli: int64(2+rng.Intn(14)) * 1000, RAMMiB: int64(8+rng.Intn(56)) << 10}
		switch x := rng.Intn(100); {
		case x < 15:
		case x < 45:
			r.GPUs, r.GPUMilli = 1, []int{250, 470, 500, 810}[rng.Intn(4)]
		case x < 85:
			r.GPUs = 1
		default:
			r.GPUs = []int{2, 4, 8}[rng.Intn(3)]
		}
		return r
	}
	for i := 0; i < nodes/4; i++ {
		j := Job{ID: fmt.Sprintf("run-%d", i), Team: teams[rng.Intn(len(teams))], SubmitTime: t0.Add(-time.Hour), Request: Request{
			GPUs: 8, CPUMilli: 64000, RAMMiB: 256 << 10, Class: classes[rng.Intn(3)], ExpectedRuntime: time.Duration(1+rng.Intn(8)) * time.Hour,
		}}
		rp := ReplicaPlacement{NodeID: snap.Nodes[i*4].ID, CPUMilli: 64000, RAMMiB: 256 << 10}
		for g := 0; g < 8; g++ {
			rp.Devices = append(rp.Devices, DeviceAssignment{GPUIndex: g, Milli: 1000, MemoryMiB: snap.Nodes[i*4].GPUs[g].MemoryMiB})
		}
		snap.Running = append(snap.Running, Allocation{Job: j, Replica: rp, StartTime: t0.Add(-30 * time.Minute)})
	}
	for i := 0; i < pending; i++ {
		r := request()
		r.Class = classes[rng.Intn(3)]
		snap.Pending = append(snap.Pending, Job{ID: fmt.Sprintf("job-%06d", i), Team: teams[rng.Intn(len(teams))], SubmitTime: t0.Add(-time.Duration(rng.Intn(3600)) * time.Second), Request: r})
	}
	return snap
}

// firstFitCycle is the in-run baseline: each pending job, in queue order, goes to the
// first node with the room, whole GPUs by index, shares on the first card with room. As
// nodes only fill during a cycle, each request shape resumes its scan where it last
// stopped, which keeps the baseline linear in nodes plus jobs.
func firstFitCycle(snap Snapshot) int {
	type node struct {
		cpu, ram int64
		free     []int
	}
	nodes := make([]node, len(snap.Nodes))
	index := map[string]int{}
	for i, n := range snap.Nodes {
		index[n.ID] = i
		nodes[i] = node{cpu: n.CPUMilli, ram: n.RAMMiB, free: make([]int, len(n.GPUs))}
		for g := range nodes[i].free {
			nodes[i].free[g] = 1000
		}
	}
	for _, a := range snap.Running {
		n := &nodes[index[a.Replica.NodeID]]
		n.cpu -= a.Replica.CPUMilli
		n.ram -= a.Replica.RAMMiB
		for _, d := range a.Replica.Devices {
			n.free[d.GPUIndex] -= d.Milli
		}
	}
	placed := 0
	type shape struct {
		gpus, milli int
		cpu, ram    int64
	}
	cursor := map[shape]int{}
	for _, j := range snap.Pending {
		r := j.Request
		milli := perGPUMilli(r)
		key := shape{r.GPUs, milli, r.CPUMilli, r.RAMMiB}
		i := cursor[key]
		for ; i < len(nodes); i++ {
			n := &nodes[i]
			if n.cpu < r.CPUMilli || n.ram < r.RAMMiB {
				continue
			}
			var cards []int
			for g, f := range n.free {
				if len(cards) < r.GPUs && ((milli == 1000 && f == 1000) || (milli < 1000 && f >= milli)) {
					cards = append(cards, g)
				}
			}
			if len(cards) < r.GPUs {
				continue
			}
			n.cpu -= r.CPUMilli
			n.ram -= r.RAMMiB
			for _, g := range cards {
				n.free[g] -= milli
			}
			placed++
			break
		}
		cursor[key] = i
	}
	return placed
}

// BenchmarkScheduleScale is one full cycle: 10,000 nodes (80,000 GPUs, a quarter busy)
// and 100,000 pending jobs. It reports the cycle time as a ratio to an in-run first fit
// over the same snapshot.
func BenchmarkScheduleScale(b *testing.B) {
	snap := scaleSnapshot(10000, 100000)
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	start, cpu0 := time.Now(), cpuTime(b)
	ffPlaced := firstFitCycle(snap)
	firstFit, firstFitCPU := time.Since(start), cpuTime(b)-cpu0
	b.ReportAllocs()
	b.ResetTimer()
	var plan Plan
	cpu0 = cpuTime(b)
	for i := 0; i < b.N; i++ {
		if plan, err = s.Schedule(snap); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	perCycle := b.Elapsed() / time.Duration(b.N)
	cycleCPU := (cpuTime(b) - cpu0) / time.Duration(b.N)
	b.ReportMetric(float64(len(plan.Placements)), "placed")
	b.ReportMetric(float64(ffPlaced), "firstfit-placed")
	b.ReportMetric(cycleCPU.Seconds(), "cpu-s/op")
	b.ReportMetric(firstFit.Seconds(), "firstfit-s")
	b.ReportMetric(float64(perCycle)/float64(firstFit), "x-firstfit")
	b.ReportMetric(float64(cycleCPU)/float64(firstFitCPU), "x-firstfit-cpu")
}

// cpuTime is the CPU time the process has used, user and system. On a machine shared
// with other work it measures the scheduler's own cost where wall time cannot.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
