package scheduler

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// randomNodes builds a mixed cluster: several models and sizes, NVLink pairs, MIG
// cards, cordoned and spot nodes.
func randomNodes(rng *rand.Rand, count int) []Node {
	models := []struct {
		name string
		mem  int64
	}{{"A100", 81920}, {"A100", 40960}, {"L4", 24576}, {"T4", 15360}, {"H100", 81920}}
	var nodes []Node
	for i := 0; i < count; i++ {
		m := models[rng.Intn(len(models))]
		gpus := []int{0, 1, 2, 4, 8}[rng.Intn(5)]
		n := gpuNode(fmt.Sprintf("n%03d", i), m.name, gpus, m.mem, int64(8+rng.Intn(120))*1000, int64(32+rng.Intn(512))<<10)
		n.Pool = []string{"default", "batch"}[rng.Intn(2)]
		n.Spot = rng.Intn(5) == 0
		// Spot nodes are the cheapest, so price preference pulls hardest toward them.
		n.PriceMicros = int64(rng.Intn(4)) * 1_000_000
		if n.Spot {
			n.PriceMicros = 100_000
		}
		n.Cordoned = rng.Intn(12) == 0
		n.Labels = map[string]string{"zone": []string{"a", "b"}[rng.Intn(2)]}
		if rng.Intn(2) == 0 {
			n = nvlinkPairs(n)
		}
		if gpus > 0 && m.name == "A100" && rng.Intn(3) == 0 {
			n.GPUs[0].MIG = []MIGSlice{migSlice(n.ID+"-m0", "1g.10gb", 10), migSlice(n.ID+"-m1", "1g.10gb", 10), migSlice(n.ID+"-m2", "2g.20gb", 20)}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func randomRequest(rng *rand.Rand) Request {
	r := Request{CPUMilli: int64(rng.Intn(32)) * 1000, RAMMiB: int64(rng.Intn(128)) << 10, ScratchMiB: int64(rng.Intn(100)), SpotAllowed: rng.Intn(3) == 0}
	switch rng.Intn(6) {
	case 0:
	case 1:
		r.GPUs, r.GPUMilli = 1, []int{100, 250, 300, 470, 500, 810}[rng.Intn(6)]
		if rng.Intn(3) == 0 {
			r.GPUMemoryMiB = int64(2+rng.Intn(20)) << 10
		}
	case 2:
		r.MIGProfile = []string{"1g.10gb", "2g.20gb"}[rng.Intn(2)]
	default:
		r.GPUs = []int{1, 1, 2, 4, 8}[rng.Intn(5)]
		if rng.Intn(3) == 0 {
			r.GPUMemoryMiB = int64(16+rng.Intn(64)) << 10
		}
	}
	if (r.GPUs > 0 || r.MIGProfile != "") && rng.Intn(4) == 0 {
		r.GPUModels = [][]string{{"A100"}, {"L4", "T4"}, {"H100", "A100"}}[rng.Intn(3)]
	}
	if rng.Intn(6) == 0 {
		r.Pool = "batch"
	}
	if rng.Intn(8) == 0 {
		r.NodeSelector = map[string]string{"zone": "b"}
	}
	if rng.Intn(6) == 0 {
		r.Replicas = 2 + rng.Intn(3)
	}
	return r
}

// fitsSomewhere is an independent oracle over the public API: does any node fit one
// replica of the request right now?
func fitsSomewhere(c *Cluster, nodes []Node, r Request) bool {
	for _, n := range nodes {
		f, _ := c.Free(n.ID)
		if n.Cordoned || (n.Spot && !r.SpotAllowed) || (r.Pool != "" && n.Pool != r.Pool) ||
			f.CPUMilli < r.CPUMilli || f.RAMMiB < r.RAMMiB || f.ScratchMiB < r.ScratchMiB {
			continue
		}
		if r.NodeSelector != nil && n.Labels["zone"] != r.NodeSelector["zone"] {
			continue
		}
		modelOK := func(g GPU) bool { return len(r.GPUModels) == 0 || slices.Contains(r.GPUModels, g.Model) }
		switch {
		case r.MIGProfile != "":
			for gi, g := range n.GPUs {
				for _, s := range g.MIG {
					if s.Profile == r.MIGProfile && modelOK(g) && slices.Contains(f.GPUs[gi].FreeMIG, s.ID) {
						return true
					}
				}
			}
		case r.GPUs == 0:
			return true
		case r.GPUMilli > 0:
			for gi, g := range n.GPUs {
				limit := r.GPUMemoryMiB
				if limit == 0 {
					limit = g.MemoryMiB * int64(r.GPUMilli) / 1000
				}
				if len(g.MIG) == 0 && modelOK(g) && limit <= g.MemoryMiB && f.GPUs[gi].FreeMilli >= r.GPUMilli && f.GPUs[gi].FreeMemoryMiB >= limit {
					return true
				}
			}
		default:
			free := 0
			for gi, g := range n.GPUs {
				if len(g.MIG) == 0 && modelOK(g) && g.MemoryMiB >= r.GPUMemoryMiB && f.GPUs[gi].FreeMilli == 1000 {
					free++
				}
			}
			if free >= r.GPUs {
				return true
			}
		}
	}
	return false
}

// TestPlacementProperties replays random jobs on random clusters: a placement never
// over-commits a node or device, incremental accounting matches a rebuild from the
// running allocations, a gang is placed whole or not at all, and a job that fits
// somewhere is never refused.
func TestPlacementProperties(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes := randomNodes(rng, 12)
		s, c := newTestCluster(t, Snapshot{Nodes: nodes})
		for i := 0; i < 120; i++ {
			j := job(fmt.Sprintf("s%d-j%d", seed, i), randomRequest(rng))
			before := freeOf(c)
			p, ok, ex := s.Place(c, j)
			if after := freeOf(c); after != before {
				t.Fatalf("seed %d job %d: Place changed the cluster", seed, i)
			}
			replicas := max(j.Request.Replicas, 1)
			if !ok {
				if replicas == 1 && fitsSomewhere(c, nodes, j.Request) {
					t.Fatalf("seed %d: job %+v refused although a node fits it: %s", seed, j.Request, ex.Reason)
				}
				continue
			}
			if len(p.Replicas) != replicas {
				t.Fatalf("seed %d: gang of %d placed %d replicas", seed, replicas, len(p.Replicas))
			}
			if err := c.Assume(j, p); err != nil {
				t.Fatalf("seed %d: placement over-commits: %v", seed, err)
			}
			rebuilt, err := NewCluster(Snapshot{Now: t0, Nodes: nodes, Running: c.Running()}, s.Config())
			if err != nil {
				t.Fatalf("seed %d: running allocations over-commit: %v", seed, err)
			}
			if freeOf(rebuilt) != freeOf(c) {
				t.Fatalf("seed %d: incremental state drifted from a rebuild", seed)
			}
			if rng.Intn(5) == 0 {
				running := c.Running()
				if err := c.Release(running[rng.Intn(len(running))].Job.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, n := range nodes {
			f, _ := c.Free(n.ID)
			if f.CPUMilli < 0 || f.RAMMiB < 0 || f.ScratchMiB < 0 {
				t.Fatalf("seed %d: node %s over-committed: %+v", seed, n.ID, f)
			}
			for _, g := range f.GPUs {
				if g.FreeMilli < 0 || g.FreeMemoryMiB < 0 {
					t.Fatalf("seed %d: node %s GPU %d over-committed: %+v", seed, n.ID, g.Index, g)
				}
			}
		}
	}
}

// TestPlanProperties runs full cycles on random clusters with random running and pending
// jobs: a plan never over-commits a node or device once its preemptions are carried
// out, never preempts an equal or higher class or a non-preemptible job, never splits a
// gang, and accounts for every pending job exactly once.
func TestPlanProperties(t *testing.T) {
	classes := []string{"production", "research", "test"}
	teams := []string{"ml", "cv", "nlp"}
	for seed := int64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes := randomNodes(rng, 10)
		s, c := newTestCluster(t, Snapshot{Nodes: nodes})
		randomJob := func(id string) Job {
			j := job(id, randomRequest(rng))
			j.Team = teams[rng.Intn(len(teams))]
			j.Request.Class = classes[rng.Intn(len(classes))]
			j.Request.Preemptible = rng.Intn(2) == 0
			j.SubmitTime = t0.Add(-time.Duration(rng.Intn(100)) * time.Hour)
			if rng.Intn(2) == 0 {
				j.Request.ExpectedRuntime = time.Duration(1+rng.Intn(10)) * time.Hour
			}
			return j
		}
		for i := 0; i < 60; i++ {
			j := randomJob(fmt.Sprintf("r%d", i))
			if p, ok, _ := s.Place(c, j); ok {
				if err := c.Assume(j, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		runningAllocs := c.Running()
		for i := range runningAllocs {
			runningAllocs[i].StartTime = t0.Add(-time.Duration(rng.Intn(5)) * time.Hour)
		}
		var pending []Job
		for i := 0; i < 40; i++ {
			pending = append(pending, randomJob(fmt.Sprintf("p%d", i)))
		}
		var quotas []Quota
		if seed%2 == 0 {
			quotas = []Quota{
				{Team: "ml", Model: AnyModel, Cohort: "lab", Nominal: 8000, BorrowingLimit: 4000, LendingLimit: -1,
					CPU: ResourceQuota{Nominal: 96000, BorrowingLimit: 32000, LendingLimit: -1}},
				{Team: "cv", Model: "A100", Cohort: "lab", Nominal: 4000, BorrowingLimit: -1, LendingLimit: 2000,
					CPU: ResourceQuota{Nominal: 64000, BorrowingLimit: -1, LendingLimit: 16000}, RAM: ResourceQuota{Nominal: 256 << 10, BorrowingLimit: 0, LendingLimit: 0}},
				{Team: "cv", Model: AnyModel, Cohort: "lab", Nominal: 2000, BorrowingLimit: 0, LendingLimit: -1,
					RAM: ResourceQuota{Nominal: 128 << 10, BorrowingLimit: -1, LendingLimit: -1}},
			}
		}
		snap := Snapshot{Now: t0, Nodes: nodes, Running: runningAllocs, Pending: pending, Quotas: quotas}
		plan, err := s.Schedule(snap)
		if err != nil {
			t.Fatal(err)
		}

		byID := map[string]Job{}
		for _, j := range pending {
			byID[j.ID] = j
		}
		seen := map[string]int{}
		for _, p := range plan.Placements {
			seen[p.JobID]++
			if want := max(byID[p.JobID].Request.Replicas, 1); len(p.Replicas) != want {
				t.Fatalf("seed %d: gang %s placed %d of %d replicas", seed, p.JobID, len(p.Replicas), want)
			}
		}
		for _, u := range plan.Unplaced {
			seen[u.JobID]++
			if u.Explanation.Reason == "" {
				t.Fatalf("seed %d: %s unplaced without a reason", seed, u.JobID)
			}
		}
		for _, j := range pending {
			if seen[j.ID] != 1 {
				t.Fatalf("seed %d: pending job %s accounted for %d times", seed, j.ID, seen[j.ID])
			}
		}

		runningJobs := map[string]Job{}
		for _, a := range runningAllocs {
			runningJobs[a.Job.ID] = a.Job
		}
		cfg := s.Config()
		preempted := map[string]bool{}
		for _, pe := range plan.Preemptions {
			v, ok := runningJobs[pe.JobID]
			if !ok || preempted[pe.JobID] {
				t.Fatalf("seed %d: preempted %s is not a running job, or preempted twice", seed, pe.JobID)
			}
			preempted[pe.JobID] = true
			vc, _ := cfg.class(v.Request.Class)
			cc, _ := cfg.class(byID[pe.For].Request.Class)
			if !v.Request.Preemptible || vc.Weight >= cc.Weight {
				t.Fatalf("seed %d: %s (%s, preemptible %v) preempted for %s (%s)", seed, v.ID, vc.Name, v.Request.Preemptible, pe.For, cc.Name)
			}
			if seen[pe.For] != 1 || slices.IndexFunc(plan.Placements, func(p Placement) bool { return p.JobID == pe.For }) < 0 {
				t.Fatalf("seed %d: %s preempted for %s, which is not placed", seed, pe.JobID, pe.For)
			}
		}

		var after []Allocation
		for _, a := range runningAllocs {
			if !preempted[a.Job.ID] {
				after = append(after, a)
			}
		}
		for _, p := range plan.Placements {
			for _, rp := range p.Replicas {
				after = append(after, Allocation{Job: byID[p.JobID], Replica: rp, StartTime: t0})
			}
		}
		if _, err := NewCluster(Snapshot{Now: t0, Nodes: nodes, Running: after}, cfg); err != nil {
			t.Fatalf("seed %d: carrying out the plan over-commits: %v", seed, err)
		}
		checkQuotasKept(t, seed, nodes, quotas, runningAllocs, after)
	}
}

// checkQuotasKept is an oracle for quota admission: every quota entry whose use of a
// resource the plan grows ends within its nominal, plus its borrowing limit in a cohort.
func checkQuotasKept(t *testing.T, seed int64, nodes []Node, quotas []Quota, before, after []Allocation) {
	t.Helper()
	type key struct{ team, model string }
	own := map[key]Quota{}
	for _, q := range quotas {
		own[key{q.Team, q.Model}] = q
	}
	modelOf := map[string]map[int]string{}
	for _, n := range nodes {
		modelOf[n.ID] = map[int]string{}
		for _, g := range n.GPUs {
			modelOf[n.ID][g.Index] = g.Model
		}
	}
	entry := func(team, model string) key {
		if _, ok := own[key{team, model}]; ok {
			return key{team, model}
		}
		return key{team, AnyModel}
	}
	use := func(as []Allocation) map[key][3]int64 {
		out := map[key][3]int64{}
		for _, a := range as {
			rp := a.Replica
			model := AnyModel
			for i, d := range rp.Devices {
				m := modelOf[rp.NodeID][d.GPUIndex]
				if i == 0 {
					model = m
				}
				u := out[entry(a.Job.Team, m)]
				u[0] += int64(d.Milli)
				out[entry(a.Job.Team, m)] = u
			}
			u := out[entry(a.Job.Team, model)]
			u[1] += rp.CPUMilli
			u[2] += rp.RAMMiB
			out[entry(a.Job.Team, model)] = u
		}
		return out
	}
	was, is := use(before), use(after)
	for k, q := range own {
		for r, rq := range []ResourceQuota{{q.Nominal, q.BorrowingLimit, q.LendingLimit}, q.CPU, q.RAM} {
			if (r > 0 && rq.Nominal == 0) || is[k][r] <= was[k][r] || is[k][r] <= rq.Nominal {
				continue
			}
			if q.Cohort == "" || (rq.BorrowingLimit >= 0 && is[k][r]-rq.Nominal > rq.BorrowingLimit) {
				t.Fatalf("seed %d: %s/%s resource %d grew from %d to %d, beyond nominal %d and borrowing limit %d",
					seed, k.team, k.model, r, was[k][r], is[k][r], rq.Nominal, rq.BorrowingLimit)
			}
		}
	}
}
