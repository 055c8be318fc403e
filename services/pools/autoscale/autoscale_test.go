package autoscale_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/pools/autoscale"
	"github.com/gantry-gpu/gantry/services/scheduler"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func template(model string, gpus int, memMiB int64, spot bool, price int64) scheduler.Node {
	n := scheduler.Node{CPUMilli: 32000, RAMMiB: 128 << 10, ScratchMiB: 1 << 20, Spot: spot, PriceMicros: price}
	for g := range gpus {
		n.GPUs = append(n.GPUs, scheduler.GPU{Index: g, Model: model, MemoryMiB: memMiB})
	}
	return n
}

func pool(name string, tmpl scheduler.Node, max int) autoscale.Pool {
	return autoscale.Pool{Name: name, Template: tmpl, Max: max, Scalable: true}
}

func pending(id string, r scheduler.Request) scheduler.Job {
	if r.CPUMilli == 0 {
		r.CPUMilli = 1000
	}
	return scheduler.Job{ID: id, Team: "vision", SubmitTime: t0.Add(-time.Minute), Request: r}
}

func decide(t *testing.T, in autoscale.Input, mutate ...func(*autoscale.Config)) autoscale.Decision {
	t.Helper()
	s, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := autoscale.DefaultConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := autoscale.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if in.Now.IsZero() {
		in.Now = t0
	}
	d, err := a.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ups(d autoscale.Decision) string {
	var parts []string
	for _, u := range d.ScaleUps {
		parts = append(parts, fmt.Sprintf("%s+%d", u.Pool, u.Nodes))
	}
	return strings.Join(parts, " ")
}

var (
	l4OnDemand = pool("l4-od", template("L4", 1, 23034, false, 1_000_000), 10)
	l4Spot     = pool("l4-spot", template("L4", 1, 23034, true, 300_000), 10)
	a100       = pool("a100-od", template("A100", 8, 81920, false, 30_000_000), 4)
)

// From zero nodes: the cheapest pool that fits each job, spot only for jobs that allow it.
func TestScaleUpFromZeroToTheCheapestPoolThatFits(t *testing.T) {
	d := decide(t, autoscale.Input{
		Pools: []autoscale.Pool{a100, l4OnDemand, l4Spot},
		Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{
			pending("strict", scheduler.Request{GPUs: 1}),
			pending("flexible", scheduler.Request{GPUs: 1, SpotAllowed: true}),
			pending("big", scheduler.Request{GPUs: 8}),
		}},
	})
	if got := ups(d); got != "l4-spot+1 l4-od+1 a100-od+1" {
		t.Fatalf("scale-ups %q", got)
	}
	for _, u := range d.ScaleUps {
		if u.Pool == "l4-od" && (len(u.Jobs) != 1 || u.Jobs[0] != "strict" || !strings.Contains(u.Reason, "cheapest") || !strings.Contains(u.Reason, "1.00 a node-hour")) {
			t.Fatalf("l4-od scale-up %+v", u)
		}
	}
	if d.Demand["a100-od"].GPUMilli != 8000 || d.Demand["l4-spot"].Jobs != 1 {
		t.Fatalf("demand %+v", d.Demand)
	}
}

// Jobs that fit on one new node share it: one request for the batch.
func TestScaleUpPacksJobsOntoFewNodes(t *testing.T) {
	var jobs []scheduler.Job
	for i := range 10 {
		jobs = append(jobs, pending(fmt.Sprintf("j%d", i), scheduler.Request{GPUs: 1}))
	}
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{pool("l4x4", template("L4", 4, 23034, false, 3_000_000), 10)},
		Snapshot: scheduler.Snapshot{Pending: jobs}})
	if got := ups(d); got != "l4x4+3" || len(d.ScaleUps[0].Jobs) != 10 {
		t.Fatalf("10 one-GPU jobs on 4-GPU nodes: %q, %+v", got, d.ScaleUps)
	}
}

func TestGangsGetANodePerReplica(t *testing.T) {
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{l4OnDemand},
		Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{pending("gang", scheduler.Request{GPUs: 1, Replicas: 3})}}})
	if got := ups(d); got != "l4-od+3" {
		t.Fatalf("gang of 3: %q", got)
	}
}

// A full pool passes the job to the next cheapest; when every fitting pool is full the
// job is held with the pools named.
func TestMaxNodesSpillsThenHolds(t *testing.T) {
	full := l4Spot
	full.Max, full.Nodes = 1, []autoscale.Node{{ID: "busy"}}
	node := template("L4", 1, 23034, true, 300_000)
	node.ID, node.Pool = "busy", "l4-spot"
	snap := scheduler.Snapshot{Nodes: []scheduler.Node{node},
		Running: []scheduler.Allocation{{Job: pending("running", scheduler.Request{GPUs: 1, SpotAllowed: true}),
			Replica: scheduler.ReplicaPlacement{NodeID: "busy", Devices: []scheduler.DeviceAssignment{{GPUIndex: 0, Milli: 1000, MemoryMiB: 23034}}, CPUMilli: 1000}}},
		Pending: []scheduler.Job{pending("flexible", scheduler.Request{GPUs: 1, SpotAllowed: true})}}
	if got := ups(decide(t, autoscale.Input{Pools: []autoscale.Pool{full, l4OnDemand}, Snapshot: snap})); got != "l4-od+1" {
		t.Fatalf("the spot pool is full, want the on-demand one: %q", got)
	}
	od := l4OnDemand
	od.Max = 0
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{full, od}, Snapshot: snap})
	if len(d.ScaleUps) != 0 || len(d.Held) != 1 || !strings.Contains(d.Held[0].Reason, "at its maximum: l4-spot (1), l4-od (0)") {
		t.Fatalf("all full: %q held %+v", ups(d), d.Held)
	}
}

// Booting machines count: what fits on them asks for nothing more; a pool in its
// cool-down holds the rest back.
func TestBootingNodesAndCooldown(t *testing.T) {
	p := l4OnDemand
	p.Booting, p.LastScaleUp = 1, t0.Add(-20*time.Second)
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}, Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{pending("a", scheduler.Request{GPUs: 1})}}})
	if len(d.ScaleUps) != 0 || len(d.Held) != 0 || d.Demand["l4-od"].Jobs != 1 {
		t.Fatalf("a job that fits the booting node: %q held %+v demand %+v", ups(d), d.Held, d.Demand)
	}
	d = decide(t, autoscale.Input{Pools: []autoscale.Pool{p}, Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{
		pending("a", scheduler.Request{GPUs: 1}), pending("b", scheduler.Request{GPUs: 1})}}})
	if len(d.ScaleUps) != 0 || len(d.Held) != 1 || !strings.Contains(d.Held[0].Reason, "cool-down of 1m0s") || d.Held[0].Jobs[0] != "b" {
		t.Fatalf("in its cool-down: %q held %+v", ups(d), d.Held)
	}
	p.LastScaleUp = t0.Add(-2 * time.Minute)
	if got := ups(decide(t, autoscale.Input{Pools: []autoscale.Pool{p}, Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{
		pending("a", scheduler.Request{GPUs: 1}), pending("b", scheduler.Request{GPUs: 1})}}})); got != "l4-od+1" {
		t.Fatalf("after the cool-down: %q", got)
	}
}

func TestBatchLimit(t *testing.T) {
	var jobs []scheduler.Job
	for i := range 7 {
		jobs = append(jobs, pending(fmt.Sprintf("j%d", i), scheduler.Request{GPUs: 1}))
	}
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{l4OnDemand}, Snapshot: scheduler.Snapshot{Pending: jobs}},
		func(c *autoscale.Config) { c.MaxBatch = 5 })
	if got := ups(d); got != "l4-od+5" || len(d.Held) != 1 || len(d.Held[0].Jobs) != 2 || !strings.Contains(d.Held[0].Reason, "the most one batch may") {
		t.Fatalf("batch of 5: %q held %+v", got, d.Held)
	}
}

// A team whose budget cannot pay for the nodes' first hours is held back; another
// team's job, and a team without a budget, are not.
func TestTeamBudgets(t *testing.T) {
	broke := pending("broke", scheduler.Request{GPUs: 8})
	rich := pending("rich", scheduler.Request{GPUs: 8})
	rich.Team = "nlp"
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{a100}, Snapshot: scheduler.Snapshot{Pending: []scheduler.Job{broke, rich}},
		Budgets: map[string]int64{"vision": 10_000_000, "nlp": 100_000_000}})
	if got := ups(d); got != "a100-od+1" || d.ScaleUps[0].Jobs[0] != "rich" {
		t.Fatalf("scale-ups %q %+v", got, d.ScaleUps)
	}
	if len(d.Held) != 1 || !strings.Contains(d.Held[0].Reason, "team vision has 10.00 left of its monthly budget") || !strings.Contains(d.Held[0].Reason, "cost 30.00 for 1h0m0s") {
		t.Fatalf("held %+v", d.Held)
	}
}

// Jobs no new node would start: over quota, or fitting no template.
func TestNothingForJobsNewNodesWouldNotStart(t *testing.T) {
	h100 := pending("h100", scheduler.Request{GPUs: 1, GPUModels: []string{"H100"}})
	quota := pending("quota", scheduler.Request{GPUs: 1})
	quota.Team = "capped"
	node := template("L4", 1, 23034, false, 1_000_000)
	node.ID, node.Pool = "idle", "l4-od"
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{l4OnDemand}, Snapshot: scheduler.Snapshot{
		Nodes:   []scheduler.Node{node},
		Pending: []scheduler.Job{h100, quota},
		Quotas:  []scheduler.Quota{{Team: "capped", Model: scheduler.AnyModel, Nominal: 0, BorrowingLimit: 0, LendingLimit: 0}},
	}})
	if len(d.ScaleUps) != 0 {
		t.Fatalf("scaled up for %+v", d.ScaleUps)
	}
	if len(d.Held) != 1 || d.Held[0].Pool != "" || d.Held[0].Jobs[0] != "h100" || !strings.Contains(d.Held[0].Reason, "no pool's node template") {
		t.Fatalf("held %+v", d.Held)
	}
}

func TestMinimumNodes(t *testing.T) {
	p := l4OnDemand
	p.Min, p.Booting = 3, 1
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p, {Name: "static", Template: template("L4", 1, 23034, false, 0), Min: 2, Max: 2}}})
	if got := ups(d); got != "l4-od+2" || !strings.Contains(d.ScaleUps[0].Reason, "below its minimum of 3") {
		t.Fatalf("minimum: %q %+v", got, d.ScaleUps)
	}
}

func TestScaleDownIdleNodes(t *testing.T) {
	p := l4OnDemand
	p.Min = 1
	p.Nodes = []autoscale.Node{
		{ID: "old", IdleSince: t0.Add(-time.Hour)},
		{ID: "older", IdleSince: t0.Add(-2 * time.Hour)},
		{ID: "recent", IdleSince: t0.Add(-time.Minute)},
		{ID: "busy"},
	}
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}})
	if len(d.ScaleDowns) != 2 || d.ScaleDowns[0].Node != "older" || d.ScaleDowns[1].Node != "old" || !strings.Contains(d.ScaleDowns[0].Reason, "had no work for 2h0m0s") {
		t.Fatalf("scale-downs %+v", d.ScaleDowns)
	}
	// Never below the minimum: with "busy" retiring already, only one idle node may go.
	p.Nodes[3].Retiring = true
	p.Min = 2
	if d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}}); len(d.ScaleDowns) != 1 || d.ScaleDowns[0].Node != "older" {
		t.Fatalf("at the minimum: %+v", d.ScaleDowns)
	}
	// Not right after a scale-up, and never a pool whose nodes join by hand.
	p.LastScaleUp = t0.Add(-5 * time.Minute)
	if d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}}); len(d.ScaleDowns) != 0 {
		t.Fatalf("right after a scale-up: %+v", d.ScaleDowns)
	}
	p.LastScaleUp, p.Scalable = time.Time{}, false
	if d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}}); len(d.ScaleDowns) != 0 {
		t.Fatalf("static pool: %+v", d.ScaleDowns)
	}
}

// An idle node a waiting job will take now is not idle.
func TestScaleDownSparesNodesAJobTakes(t *testing.T) {
	p := l4OnDemand
	p.Nodes = []autoscale.Node{{ID: "idle", IdleSince: t0.Add(-time.Hour)}}
	node := template("L4", 1, 23034, false, 1_000_000)
	node.ID, node.Pool = "idle", "l4-od"
	d := decide(t, autoscale.Input{Pools: []autoscale.Pool{p}, Snapshot: scheduler.Snapshot{Nodes: []scheduler.Node{node},
		Pending: []scheduler.Job{pending("a", scheduler.Request{GPUs: 1})}}})
	if len(d.ScaleDowns) != 0 || len(d.ScaleUps) != 0 {
		t.Fatalf("ups %q downs %+v", ups(d), d.ScaleDowns)
	}
}

func TestBadTemplateIsAnError(t *testing.T) {
	s, _ := scheduler.New(scheduler.DefaultConfig())
	a, _ := autoscale.New(s, autoscale.DefaultConfig())
	bad := template("L4", 2, 23034, false, 1)
	bad.GPUs[1].Index = 0
	_, err := a.Decide(autoscale.Input{Now: t0, Pools: []autoscale.Pool{pool("dup", bad, 1)}})
	if err == nil || !strings.Contains(err.Error(), "pool dup") {
		t.Fatalf("err %v", err)
	}
	if _, err := autoscale.New(s, autoscale.Config{}); err == nil {
		t.Fatal("a zero config was accepted")
	}
}
