package scheduler

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// cpuJob asks for cores and GiB of RAM and no GPU.
func cpuJob(id, team string, cores, gib int64) Job {
	return Job{ID: id, Team: team, SubmitTime: t0, Request: Request{CPUMilli: cores * 1000, RAMMiB: gib << 10, Class: "research"}}
}

// gpuJob asks for whole GPUs and cores.
func gpuJob(id, team string, gpus int, cores int64) Job {
	return Job{ID: id, Team: team, SubmitTime: t0, Request: Request{GPUs: gpus, CPUMilli: cores * 1000, Class: "research"}}
}

// jobs makes n jobs named prefix0, prefix1, … with mk.
func jobs(prefix string, n int, mk func(id string) Job) []Job {
	var out []Job
	for i := 0; i < n; i++ {
		out = append(out, mk(fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

func cpuQuota(team, model, cohort string, nominal, borrowing, lending int64) Quota {
	return Quota{Team: team, Model: model, Cohort: cohort, BorrowingLimit: -1, LendingLimit: -1,
		CPU: ResourceQuota{Nominal: nominal * 1000, BorrowingLimit: borrowing, LendingLimit: lending}}
}

// TestResourceQuotas: CPU and RAM quotas per entry, borrowing and lending in a cohort,
// and every job left waiting names the resource.
func TestResourceQuotas(t *testing.T) {
	nodes := []Node{gpuNode("gpu", "A100", 8, 40960, 256000, 2<<20), gpuNode("cpu", "", 0, 0, 256000, 2<<20)}
	lots := int64(math.MaxInt64)
	cases := []struct {
		name    string
		quotas  []Quota
		pending []Job
		placed  int
		reason  string // in the explanation of every unplaced job
	}{
		{
			name:    "the any-model CPU quota caps jobs without GPUs",
			quotas:  []Quota{cpuQuota("vision", AnyModel, "", 64, 0, 0)},
			pending: jobs("v", 3, func(id string) Job { return cpuJob(id, "vision", 32, 1) }),
			placed:  2,
			reason:  "team vision's CPU quota is exhausted: 64/64 cores",
		},
		{
			name:    "a model's CPU quota counts the cores of jobs on its GPUs",
			quotas:  []Quota{{Team: "vision", Model: "A100", Nominal: 8000, CPU: ResourceQuota{Nominal: 32000}}},
			pending: jobs("v", 3, func(id string) Job { return gpuJob(id, "vision", 1, 16) }),
			placed:  2,
			reason:  "team vision's CPU quota for A100 is exhausted: 32/32 cores",
		},
		{
			name:   "a job without GPUs is outside a model's CPU quota",
			quotas: []Quota{{Team: "vision", Model: "A100", Nominal: 8000, CPU: ResourceQuota{Nominal: 32000}}},
			pending: append(jobs("g", 1, func(id string) Job { return gpuJob(id, "vision", 1, 32) }),
				jobs("c", 2, func(id string) Job { return cpuJob(id, "vision", 100, 1) })...),
			placed: 3,
		},
		{
			name:    "the memory quota says what is left",
			quotas:  []Quota{{Team: "vision", Model: AnyModel, RAM: ResourceQuota{Nominal: 100 << 10}}},
			pending: jobs("v", 3, func(id string) Job { return cpuJob(id, "vision", 1, 40) }),
			placed:  2,
			reason:  "team vision's memory quota is exhausted: 80/100 GiB, too little for 40 more",
		},
		{
			name:    "a zero CPU nominal leaves CPU unlimited",
			quotas:  []Quota{{Team: "vision", Model: AnyModel, RAM: ResourceQuota{Nominal: 1 << 20}}},
			pending: jobs("v", 4, func(id string) Job { return cpuJob(id, "vision", 120, 1) }),
			placed:  4,
		},
		{
			name: "CPU is borrowed from the cohort up to the borrowing limit",
			quotas: []Quota{
				cpuQuota("vision", AnyModel, "lab", 32, 32000, -1),
				cpuQuota("nlp", AnyModel, "lab", 64, -1, -1),
			},
			pending: jobs("v", 5, func(id string) Job { return cpuJob(id, "vision", 16, 1) }),
			placed:  4,
			reason:  "team vision's CPU quota is exhausted: 64/32 cores, and it may borrow at most 32 cores from cohort lab",
		},
		{
			name: "a lending limit keeps part of an idle team's cores",
			quotas: []Quota{
				cpuQuota("vision", AnyModel, "lab", 32, -1, -1),
				cpuQuota("nlp", AnyModel, "lab", 64, -1, 16000),
			},
			pending: jobs("v", 5, func(id string) Job { return cpuJob(id, "vision", 16, 1) }),
			placed:  3,
			reason:  "team vision's CPU quota is exhausted: 48/32 cores, and cohort lab has nothing left to lend",
		},
		{
			name: "a team unlimited in CPU lends none of it",
			quotas: []Quota{
				cpuQuota("vision", AnyModel, "lab", 32, -1, -1),
				{Team: "nlp", Model: AnyModel, Cohort: "lab", Nominal: 8000, LendingLimit: -1, BorrowingLimit: -1},
			},
			pending: jobs("v", 4, func(id string) Job { return cpuJob(id, "vision", 16, 1) }),
			placed:  2,
			reason:  "cohort lab has nothing left to lend",
		},
		{
			name: "CPU is lent only within the model's cohort entries",
			quotas: []Quota{
				{Team: "vision", Model: "A100", Cohort: "lab", Nominal: 8000, BorrowingLimit: -1, LendingLimit: -1, CPU: ResourceQuota{Nominal: 16000, BorrowingLimit: -1, LendingLimit: -1}},
				cpuQuota("nlp", AnyModel, "lab", 64, -1, -1),
			},
			pending: jobs("v", 2, func(id string) Job { return gpuJob(id, "vision", 1, 16) }),
			placed:  1,
			reason:  "team vision's CPU quota for A100 is exhausted: 16/16 cores, and cohort lab has nothing left to lend",
		},
		{
			name: "huge and unlimited figures saturate instead of overflowing",
			quotas: []Quota{
				{Team: "vision", Model: AnyModel, Cohort: "lab", Nominal: lots, BorrowingLimit: lots, LendingLimit: -1,
					CPU: ResourceQuota{Nominal: 32000, BorrowingLimit: lots, LendingLimit: -1}, RAM: ResourceQuota{Nominal: lots, BorrowingLimit: -1, LendingLimit: -1}},
				{Team: "nlp", Model: AnyModel, Cohort: "lab", Nominal: lots, BorrowingLimit: -1, LendingLimit: -1,
					CPU: ResourceQuota{Nominal: lots, BorrowingLimit: -1, LendingLimit: -1}, RAM: ResourceQuota{Nominal: lots, BorrowingLimit: -1, LendingLimit: -1}},
			},
			pending: append(jobs("c", 5, func(id string) Job { return cpuJob(id, "vision", 16, 64) }),
				jobs("g", 2, func(id string) Job { return gpuJob(id, "vision", 4, 8) })...),
			placed: 7,
		},
		{
			name:    "the GPU quota still applies beside the CPU quota",
			quotas:  []Quota{{Team: "vision", Model: AnyModel, Nominal: 2000, CPU: ResourceQuota{Nominal: 256000}}},
			pending: jobs("v", 3, func(id string) Job { return gpuJob(id, "vision", 1, 1) }),
			placed:  2,
			reason:  "team vision's GPU quota for any model is exhausted: 2/2 GPUs",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := schedule(t, Snapshot{Nodes: nodes, Pending: tc.pending, Quotas: tc.quotas})
			if len(plan.Placements) != tc.placed {
				t.Fatalf("placed %v, want %d; unplaced %+v", placedIDs(plan), tc.placed, plan.Unplaced)
			}
			for _, u := range plan.Unplaced {
				if !strings.Contains(u.Explanation.Reason, tc.reason) || u.Explanation.Rejections[RejectQuota] == 0 {
					t.Errorf("%s: reason %q rejections %v, want %q by quota", u.JobID, u.Explanation.Reason, u.Explanation.Rejections, tc.reason)
				}
			}
			if plan.Reservation != nil {
				t.Errorf("a job held back by quota took a reservation: %+v", plan.Reservation)
			}
		})
	}
}

func TestResourceQuotaValidation(t *testing.T) {
	n := gpuNode("n", "A100", 1, 40960, 8000, 1<<10)
	for _, tc := range []struct {
		name  string
		quota Quota
		field string
	}{
		{"negative CPU", Quota{Team: "ml", CPU: ResourceQuota{Nominal: -1}}, "quotas[0].cpu.nominal"},
		{"negative RAM", Quota{Team: "ml", RAM: ResourceQuota{Nominal: -5}}, "quotas[0].ram.nominal"},
		{"lending more CPU than nominal", Quota{Team: "ml", CPU: ResourceQuota{Nominal: 1000, LendingLimit: 2000}}, "quotas[0].cpu.lending_limit"},
		{"lending more RAM than nominal", Quota{Team: "ml", RAM: ResourceQuota{Nominal: 1024, LendingLimit: 2048}}, "quotas[0].ram.lending_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCluster(Snapshot{Nodes: []Node{n}, Quotas: []Quota{tc.quota}}, DefaultConfig())
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
}

// A team's running jobs count against its CPU quota from the snapshot on, and a job
// that ends gives its cores back.
func TestCPUQuotaCountsRunningJobs(t *testing.T) {
	nodes := []Node{gpuNode("cpu", "", 0, 0, 256000, 2<<20)}
	q := []Quota{cpuQuota("vision", AnyModel, "", 64, 0, 0)}
	running := cpuJob("old", "vision", 48, 1)
	s, c := newTestCluster(t, Snapshot{Nodes: nodes, Quotas: q, Running: []Allocation{
		{Job: running, Replica: ReplicaPlacement{NodeID: "cpu", CPUMilli: 48000, RAMMiB: 1 << 10}, StartTime: t0.Add(-time.Hour)},
	}})
	j := cpuJob("new", "vision", 32, 1)
	if _, ok, ex := s.Place(c, j); ok || !strings.Contains(ex.Reason, "team vision's CPU quota is exhausted: 48/64 cores, too little for 32 more") {
		t.Fatalf("placed %v, reason %q", ok, ex.Reason)
	}
	if err := c.Release("old"); err != nil {
		t.Fatal(err)
	}
	mustPlace(t, s, c, j)
}

// Preemption reclaims borrowed cores before any team's guaranteed ones, though the
// borrower's jobs have made more progress.
func TestBorrowedCPUIsReclaimedFirst(t *testing.T) {
	nodes := []Node{gpuNode("cpu", "", 0, 0, 128000, 1<<20)}
	quotas := []Quota{
		cpuQuota("lender", AnyModel, "lab", 64, -1, -1),
		cpuQuota("borrower", AnyModel, "lab", 32, -1, -1),
		cpuQuota("owner", AnyModel, "lab", 32, -1, -1),
	}
	mk := func(id, team string, start time.Time) Allocation {
		j := cpuJob(id, team, 32, 1)
		j.Request.Class, j.Request.Preemptible, j.SubmitTime = "test", true, t0.Add(-5*time.Hour)
		return Allocation{Job: j, Replica: ReplicaPlacement{NodeID: "cpu", CPUMilli: 32000, RAMMiB: 1 << 10}, StartTime: start}
	}
	running := []Allocation{
		mk("lend1", "lender", t0.Add(-time.Minute)), mk("lend2", "lender", t0.Add(-time.Minute)),
		mk("bor1", "borrower", t0.Add(-3*time.Hour)), mk("bor2", "borrower", t0.Add(-3*time.Hour)),
	}
	plan := schedule(t, Snapshot{Nodes: nodes, Running: running, Quotas: quotas, Pending: []Job{cpuJob("mine", "owner", 32, 1)}})
	if len(plan.Preemptions) != 1 || plan.Preemptions[0].Team != "borrower" || !strings.Contains(plan.Preemptions[0].Reason, "borrowed") {
		t.Fatalf("preemptions %+v, want one of the borrower's jobs", plan.Preemptions)
	}
	if len(plan.Placements) != 1 {
		t.Fatalf("placed %v", placedIDs(plan))
	}
}
