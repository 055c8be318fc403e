package scheduler

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// schedule runs one cycle with the default configuration, edited.
func schedule(t *testing.T, snap Snapshot, edit ...func(*Config)) Plan {
	t.Helper()
	cfg := DefaultConfig()
	for _, e := range edit {
		e(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Now.IsZero() {
		snap.Now = t0
	}
	plan, err := s.Schedule(snap)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func placedIDs(p Plan) []string {
	var out []string
	for _, pl := range p.Placements {
		out = append(out, pl.JobID)
	}
	return out
}

func unplaced(p Plan, id string) (Explanation, bool) {
	for _, u := range p.Unplaced {
		if u.JobID == id {
			return u.Explanation, true
		}
	}
	return Explanation{}, false
}

// running builds an allocation of whole GPUs on a node.
func runningOn(j Job, node string, start time.Time, gpus ...int) Allocation {
	rp := ReplicaPlacement{NodeID: node, CPUMilli: j.Request.CPUMilli}
	for _, g := range gpus {
		rp.Devices = append(rp.Devices, DeviceAssignment{GPUIndex: g, Milli: 1000, MemoryMiB: 40960})
	}
	return Allocation{Job: j, Replica: rp, StartTime: start}
}

func classJob(id, team, class string, gpus int, submit time.Time) Job {
	return Job{ID: id, Team: team, SubmitTime: submit, Request: Request{GPUs: gpus, Class: class}}
}

func TestPriorityClassesGoFirst(t *testing.T) {
	plan := schedule(t, Snapshot{
		Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)},
		Pending: []Job{
			classJob("test", "a", "test", 1, t0.Add(-48*time.Hour)),
			classJob("research", "a", "research", 1, t0.Add(-time.Hour)),
			classJob("prod", "a", "production", 1, t0),
		},
	})
	if got := placedIDs(plan); !slices.Equal(got, []string{"prod"}) {
		t.Fatalf("placed %v, want the production job", got)
	}
}

func TestAgeingOrdersWithinAClass(t *testing.T) {
	plan := schedule(t, Snapshot{
		Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)},
		Pending: []Job{
			classJob("a-new", "a", "research", 1, t0.Add(-time.Minute)),
			classJob("z-old", "a", "research", 1, t0.Add(-30*time.Hour)),
		},
	})
	if got := placedIDs(plan); !slices.Equal(got, []string{"z-old"}) {
		t.Fatalf("placed %v, want the job that waited longest", got)
	}
	t.Run("ageing never lifts a job over a higher class by default", func(t *testing.T) {
		plan := schedule(t, Snapshot{
			Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)},
			Pending: []Job{
				classJob("ancient-test", "a", "test", 1, t0.Add(-365*24*time.Hour)),
				classJob("fresh-research", "a", "research", 1, t0),
			},
		})
		if got := placedIDs(plan); !slices.Equal(got, []string{"fresh-research"}) {
			t.Fatalf("placed %v", got)
		}
	})
}

func TestFairShareFavoursTheTeamThatUsedLess(t *testing.T) {
	usage := []UsageRecord{{Team: "heavy", Start: t0.Add(-72 * time.Hour), End: t0.Add(-time.Hour), GPUMilli: 8000, CPUMilli: 64000}}
	plan := schedule(t, Snapshot{
		Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)},
		Usage: usage,
		Pending: []Job{
			classJob("a-heavy", "heavy", "research", 1, t0.Add(-time.Hour)),
			classJob("b-light", "light", "research", 1, t0.Add(-time.Hour)),
		},
	})
	if got := placedIDs(plan); !slices.Equal(got, []string{"b-light"}) {
		t.Fatalf("placed %v, want the light team's job", got)
	}
	s, _ := New(DefaultConfig())
	_, c := newTestCluster(t, Snapshot{Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)}})
	f := s.fairShare(Snapshot{Now: t0, Nodes: []Node{gpuNode("n", "A100", 1, 40960, 16000, 64<<10)}, Usage: usage, Pending: []Job{{Team: "light"}}}, c)
	if f.factor("light") != 1 || f.factor("heavy") != 0.5*0.5 {
		// heavy holds all the usage (share 1) against half the entitlement: 2^(-1/0.5).
		t.Fatalf("factors light %v heavy %v", f.factor("light"), f.factor("heavy"))
	}
}

func TestDecayHalvesOldUsage(t *testing.T) {
	day := (24 * time.Hour).Seconds()
	recent := decayedSeconds(day, 0, 7*day)
	old := decayedSeconds(8*day, 7*day, 7*day)
	if r := old / recent; r < 0.4999 || r > 0.5001 {
		t.Fatalf("a day of use a week ago weighs %.4f of a day today, want 0.5", r)
	}
}

func TestQuotas(t *testing.T) {
	nodes := []Node{gpuNode("n", "A100", 8, 40960, 64000, 512<<10)}
	pending := func(team string, n int) []Job {
		var js []Job
		for i := 0; i < n; i++ {
			js = append(js, classJob(team+string(rune('0'+i)), team, "research", 1, t0))
		}
		return js
	}
	t.Run("nominal quota caps a team outside any cohort", func(t *testing.T) {
		plan := schedule(t, Snapshot{Nodes: nodes, Pending: pending("ml", 3), Quotas: []Quota{{Team: "ml", Model: "A100", Nominal: 2000}}})
		if len(plan.Placements) != 2 {
			t.Fatalf("placed %v, want 2", placedIDs(plan))
		}
		ex, _ := unplaced(plan, "ml2")
		if !strings.Contains(ex.Reason, "team ml's GPU quota for A100 is exhausted: 2/2 GPUs") || ex.Rejections[RejectQuota] != 1 {
			t.Fatalf("reason %q rejections %v", ex.Reason, ex.Rejections)
		}
		if plan.Reservation != nil {
			t.Fatal("a job held back by quota took a reservation")
		}
	})
	t.Run("borrowing from the cohort up to the borrowing limit", func(t *testing.T) {
		plan := schedule(t, Snapshot{Nodes: nodes, Pending: pending("ml", 6), Quotas: []Quota{
			{Team: "ml", Model: "A100", Cohort: "lab", Nominal: 2000, BorrowingLimit: 3000, LendingLimit: -1},
			{Team: "cv", Model: "A100", Cohort: "lab", Nominal: 4000, BorrowingLimit: -1, LendingLimit: -1},
		}})
		if len(plan.Placements) != 5 {
			t.Fatalf("placed %v, want 2 nominal + 3 borrowed", placedIDs(plan))
		}
	})
	t.Run("lending limit keeps part of an idle team's quota", func(t *testing.T) {
		plan := schedule(t, Snapshot{Nodes: nodes, Pending: pending("ml", 6), Quotas: []Quota{
			{Team: "ml", Model: "A100", Cohort: "lab", Nominal: 2000, BorrowingLimit: -1, LendingLimit: -1},
			{Team: "cv", Model: "A100", Cohort: "lab", Nominal: 4000, BorrowingLimit: -1, LendingLimit: 1000},
		}})
		if len(plan.Placements) != 3 {
			t.Fatalf("placed %v, want 2 nominal + 1 lent", placedIDs(plan))
		}
		ex, _ := unplaced(plan, "ml3")
		if !strings.Contains(ex.Reason, "cohort lab has nothing left to lend") {
			t.Fatalf("reason %q", ex.Reason)
		}
	})
	t.Run("a team without a quota for the model gets none of it", func(t *testing.T) {
		plan := schedule(t, Snapshot{Nodes: nodes, Pending: pending("ml", 1), Quotas: []Quota{{Team: "ml", Model: "H100", Nominal: 8000}}})
		ex, ok := unplaced(plan, "ml0")
		if !ok || !strings.Contains(ex.Reason, "team ml has no GPU quota for A100") {
			t.Fatalf("reason %q", ex.Reason)
		}
	})
	t.Run("the any-model quota covers models without their own", func(t *testing.T) {
		plan := schedule(t, Snapshot{Nodes: nodes, Pending: pending("ml", 3), Quotas: []Quota{{Team: "ml", Model: AnyModel, Nominal: 3000}}})
		if len(plan.Placements) != 3 {
			t.Fatalf("placed %v", placedIDs(plan))
		}
	})
}

func TestGangIsAllOrNothingInACycle(t *testing.T) {
	big := classJob("gang", "a", "research", 4, t0.Add(-time.Hour))
	big.Request.Replicas = 3
	plan := schedule(t, Snapshot{
		Nodes:   []Node{gpuNode("n1", "A100", 4, 40960, 64000, 512<<10), gpuNode("n2", "A100", 4, 40960, 64000, 512<<10)},
		Pending: []Job{big, classJob("small", "a", "research", 1, t0)},
	})
	if got := placedIDs(plan); !slices.Equal(got, []string{"small"}) {
		t.Fatalf("placed %v, want only the small job", got)
	}
	ex, _ := unplaced(plan, "gang")
	if !strings.Contains(ex.Reason, "only 2 of 3 gang replicas fit") {
		t.Fatalf("reason %q", ex.Reason)
	}
}

func TestBackfillNeverDelaysTheHead(t *testing.T) {
	r1 := classJob("r1", "a", "research", 5, t0.Add(-time.Hour))
	r1.Request.ExpectedRuntime = 3 * time.Hour // ends at t0+2h
	r2 := classJob("r2", "a", "research", 7, t0.Add(-time.Hour))
	head := classJob("head", "a", "research", 4, t0.Add(-time.Hour))
	short := classJob("short", "a", "test", 2, t0)
	short.Request.ExpectedRuntime = time.Hour
	long := classJob("long", "a", "test", 1, t0)
	long.Request.ExpectedRuntime = 3 * time.Hour
	unknown := classJob("unknown", "a", "test", 1, t0)
	plan := schedule(t, Snapshot{
		Nodes:   []Node{gpuNode("n1", "A100", 8, 40960, 64000, 512<<10), gpuNode("n2", "A100", 8, 40960, 64000, 512<<10)},
		Running: []Allocation{runningOn(r1, "n1", t0.Add(-time.Hour), 0, 1, 2, 3, 4), runningOn(r2, "n2", t0.Add(-time.Hour), 0, 1, 2, 3, 4, 5, 6)},
		Pending: []Job{head, short, long, unknown},
	})
	if plan.Reservation == nil || plan.Reservation.JobID != "head" || !slices.Equal(plan.Reservation.NodeIDs, []string{"n1"}) || !plan.Reservation.Start.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("reservation %+v, want n1 for head from t0+2h", plan.Reservation)
	}
	where := map[string]string{}
	for _, p := range plan.Placements {
		where[p.JobID] = p.Replicas[0].NodeID
	}
	if len(where) != 2 || where["short"] != "n1" || where["long"] != "n2" {
		t.Fatalf("placed %v: short should finish on n1 before head starts, long go to n2 outside the reservation", where)
	}
	ex, _ := unplaced(plan, "unknown")
	if !strings.Contains(ex.Reason, "would delay job head") {
		t.Fatalf("reason %q", ex.Reason)
	}
	hx, _ := unplaced(plan, "head")
	if !strings.Contains(hx.Reason, "1 node held for it from 2026-01-05 11:00 UTC") || !strings.Contains(hx.Reason, "would fit after 1 research job finishes") {
		t.Fatalf("head reason %q", hx.Reason)
	}
	t.Run("without backfill nothing overtakes the head", func(t *testing.T) {
		plan := schedule(t, Snapshot{
			Nodes:   []Node{gpuNode("n1", "A100", 8, 40960, 64000, 512<<10), gpuNode("n2", "A100", 8, 40960, 64000, 512<<10)},
			Running: []Allocation{runningOn(r1, "n1", t0.Add(-time.Hour), 0, 1, 2, 3, 4), runningOn(r2, "n2", t0.Add(-time.Hour), 0, 1, 2, 3, 4, 5, 6)},
			Pending: []Job{head, short, long},
		}, func(c *Config) { c.Backfill = false })
		if len(plan.Placements) != 0 {
			t.Fatalf("placed %v", placedIDs(plan))
		}
		if ex, _ := unplaced(plan, "long"); !strings.Contains(ex.Reason, "waiting behind job head") {
			t.Fatalf("reason %q", ex.Reason)
		}
	})
}

func TestMinimalPreemption(t *testing.T) {
	nodes := []Node{gpuNode("n", "A100", 4, 40960, 64000, 512<<10)}
	victim := func(id, class string, gpus int, preemptible bool) Job {
		j := classJob(id, "b", class, gpus, t0.Add(-5*time.Hour))
		j.Request.Preemptible = preemptible
		return j
	}
	a, b, c := victim("a", "test", 1, true), victim("b", "test", 1, true), victim("c", "test", 2, true)
	base := []Allocation{
		runningOn(a, "n", t0.Add(-2*time.Hour), 0),
		runningOn(b, "n", t0.Add(-time.Hour), 1),
		runningOn(c, "n", t0.Add(-time.Hour), 2, 3),
	}
	cases := []struct {
		name    string
		claim   Job
		running []Allocation
		want    []string
	}{
		{"one GPU evicts only the job with least progress lost", classJob("p1", "a", "production", 1, t0), base, []string{"b"}},
		{"two GPUs evict one job rather than two", classJob("p2", "a", "production", 2, t0), base, []string{"c"}},
		{"equal class never preempts", classJob("t1", "a", "test", 1, t0), base, nil},
		{"non-preemptible jobs stay", classJob("p3", "a", "production", 1, t0), []Allocation{runningOn(victim("x", "test", 4, false), "n", t0, 0, 1, 2, 3)}, nil},
		{"higher class is never a victim", classJob("r1", "a", "research", 1, t0), []Allocation{runningOn(victim("y", "production", 4, true), "n", t0, 0, 1, 2, 3)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := schedule(t, Snapshot{Nodes: nodes, Running: tc.running, Pending: []Job{tc.claim}})
			var got []string
			for _, p := range plan.Preemptions {
				got = append(got, p.JobID)
				if p.For != tc.claim.ID || !strings.Contains(p.Reason, "outranks test") {
					t.Errorf("preemption %+v", p)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("preempted %v, want %v", got, tc.want)
			}
			if (tc.want != nil) != (len(plan.Placements) == 1) {
				t.Fatalf("placements %v", placedIDs(plan))
			}
		})
	}
	t.Run("borrowed capacity is reclaimed first", func(t *testing.T) {
		quotas := []Quota{
			{Team: "lender", Model: "A100", Cohort: "lab", Nominal: 2000, BorrowingLimit: -1, LendingLimit: -1},
			{Team: "borrower", Model: "A100", Cohort: "lab", Nominal: 1000, BorrowingLimit: -1, LendingLimit: -1},
			{Team: "owner", Model: "A100", Cohort: "lab", Nominal: 1000, BorrowingLimit: -1, LendingLimit: -1},
		}
		mk := func(id, team string) Job {
			j := classJob(id, team, "test", 1, t0.Add(-5*time.Hour))
			j.Request.Preemptible = true
			return j
		}
		// The borrower's jobs started last, so on progress alone the lender's would go.
		allocs := []Allocation{
			runningOn(mk("lend1", "lender"), "n", t0.Add(-time.Minute), 0),
			runningOn(mk("lend2", "lender"), "n", t0.Add(-time.Minute), 1),
			runningOn(mk("bor1", "borrower"), "n", t0.Add(-3*time.Hour), 2),
			runningOn(mk("bor2", "borrower"), "n", t0.Add(-3*time.Hour), 3),
		}
		plan := schedule(t, Snapshot{Nodes: nodes, Running: allocs, Quotas: quotas, Pending: []Job{classJob("mine", "owner", "research", 1, t0)}})
		if len(plan.Preemptions) != 1 || plan.Preemptions[0].Team != "borrower" || !strings.Contains(plan.Preemptions[0].Reason, "borrowed") {
			t.Fatalf("preemptions %+v, want one of the borrower's jobs", plan.Preemptions)
		}
	})
}

func TestScheduleExplainsWaiting(t *testing.T) {
	long := classJob("train", "a", "research", 8, t0.Add(-time.Hour))
	long.Request.ExpectedRuntime = 10 * time.Hour
	plan := schedule(t, Snapshot{
		Nodes:   []Node{gpuNode("n1", "A100", 8, 40960, 64000, 512<<10), gpuNode("n2", "A100", 8, 40960, 64000, 512<<10)},
		Running: []Allocation{runningOn(long, "n1", t0.Add(-time.Hour), 0, 1, 2, 3, 4, 5, 6, 7), runningOn(classJob("other", "a", "research", 4, t0), "n2", t0.Add(-time.Hour), 0, 1, 2, 3)},
		Pending: []Job{classJob("wants8", "b", "research", 8, t0)},
	})
	ex, ok := unplaced(plan, "wants8")
	if !ok {
		t.Fatal("job placed on a full cluster")
	}
	for _, part := range []string{"8 × GPU", "2 nodes have fewer than 8 free GPUs", "2 nodes would fit after 1 research job finishes"} {
		if !strings.Contains(ex.Reason, part) {
			t.Errorf("reason %q lacks %q", ex.Reason, part)
		}
	}
	if ex.Rejections[RejectGPUsBusy] != 2 {
		t.Errorf("rejections %v", ex.Rejections)
	}
}

func TestScheduleRejectsInconsistentSnapshots(t *testing.T) {
	s, _ := New(DefaultConfig())
	if _, err := s.Schedule(Snapshot{Now: t0, Running: []Allocation{runningOn(classJob("x", "a", "research", 1, t0), "ghost", t0, 0)}}); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("err = %v", err)
	}
}

// A class that may not preempt waits, even for a preemptible job of a lower class.
func TestClassThatMayNotPreemptWaits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Classes[1].CanPreempt = false // research
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	snap := Snapshot{
		Now:   time.Unix(1_700_000_000, 0).UTC(),
		Nodes: []Node{{ID: "n1", CPUMilli: 8000, RAMMiB: 32768, GPUs: []GPU{{Index: 0, UUID: "g0", Model: "L4", MemoryMiB: 24576}}}},
		Running: []Allocation{{
			Job:       Job{ID: "low", Team: "a", Request: Request{GPUs: 1, Replicas: 1, Class: "test", Preemptible: true}},
			Replica:   ReplicaPlacement{NodeID: "n1", Devices: []DeviceAssignment{{GPUIndex: 0, UUID: "g0", Model: "L4", Milli: 1000, MemoryMiB: 24576}}},
			StartTime: time.Unix(1_699_999_000, 0).UTC(),
		}},
		Pending: []Job{{ID: "mid", Team: "b", SubmitTime: time.Unix(1_699_999_500, 0).UTC(), Request: Request{GPUs: 1, Replicas: 1, Class: "research"}}},
	}
	plan, err := s.Schedule(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Preemptions) != 0 || len(plan.Placements) != 0 {
		t.Fatalf("research preempted without the right: %+v", plan)
	}
	snap.Pending[0].Request.Class = "production"
	if plan, _ = s.Schedule(snap); len(plan.Preemptions) != 1 || plan.Preemptions[0].JobID != "low" {
		t.Fatalf("production, which may preempt, did not: %+v", plan)
	}
}

// A project's placement policy keeps its jobs off nodes outside it, and says so; a job
// of another project takes the free node.
func TestPlacementPolicyIsEnforced(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	node := func(id, region string, confidential bool) Node {
		return Node{ID: id, Pool: "gpu", Region: region, Confidential: confidential, CPUMilli: 8000, RAMMiB: 32768,
			GPUs: []GPU{{Index: 0, UUID: "g-" + id, Model: "L4", MemoryMiB: 24576}}}
	}
	now := time.Unix(1_700_000_000, 0).UTC()
	snap := Snapshot{Now: now, Nodes: []Node{node("us", "us-east", false), node("eu", "eu-west", false)},
		Pending: []Job{
			{ID: "secret", Team: "a", SubmitTime: now, Request: Request{GPUs: 1, Replicas: 1, Class: "research", Policy: Policy{Regions: []string{"eu-west"}, ConfidentialOnly: true}}},
			{ID: "resident", Team: "a", SubmitTime: now.Add(time.Second), Request: Request{GPUs: 1, Replicas: 1, Class: "research", Policy: Policy{Regions: []string{"eu-west"}}}},
		}}
	plan, err := s.Schedule(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Placements) != 1 || plan.Placements[0].JobID != "resident" || plan.Placements[0].Replicas[0].NodeID != "eu" {
		t.Fatalf("placements = %+v", plan.Placements)
	}
	if len(plan.Unplaced) != 1 || !strings.Contains(plan.Unplaced[0].Explanation.Reason, "outside the project's placement policy (regions eu-west; confidential computing only)") {
		t.Fatalf("unplaced = %+v", plan.Unplaced)
	}
	snap.Nodes[1].Confidential = true
	if plan, _ = s.Schedule(snap); len(plan.Placements) != 1 || plan.Placements[0].JobID != "secret" {
		t.Fatalf("on a confidential eu node: %+v", plan.Placements)
	}
}

// A job that names a container image goes to a node that runs containers, a plain
// command to a process node, whatever else would score; where none is free of the
// right kind the job waits, and the explanation counts the nodes of the other kind.
func TestPlacementFollowsTheRuntime(t *testing.T) {
	node := func(id string, runs Runs, gpus int) Node {
		n := gpuNode(id, "L4", gpus, 24576, 16000, 65536)
		n.Runs = runs
		return n
	}
	boxed := func(id string, submit time.Duration) Job {
		j := classJob(id, "a", "research", 1, t0.Add(submit))
		j.Request.Container = true
		return j
	}
	plain := func(id string, submit time.Duration) Job { return classJob(id, "a", "research", 1, t0.Add(submit)) }
	cases := []struct {
		name    string
		nodes   []Node
		pending []Job
		want    map[string]string   // job -> node
		waiting map[string][]string // job -> parts of its explanation
	}{
		{
			name:    "each kind on its own node",
			nodes:   []Node{node("proc", RunsPlain, 2), node("box", RunsContainers, 2)},
			pending: []Job{boxed("image", 0), plain("plain", time.Second)},
			want:    map[string]string{"image": "box", "plain": "proc"},
		},
		{
			name:    "a node that runs both takes either",
			nodes:   []Node{node("slurm", RunsBoth, 2)},
			pending: []Job{boxed("image", 0), plain("plain", time.Second)},
			want:    map[string]string{"image": "slurm", "plain": "slurm"},
		},
		{
			name:    "an image waits on process nodes",
			nodes:   []Node{node("p1", RunsPlain, 1), node("p2", RunsPlain, 1), node("p3", RunsPlain, 1)},
			pending: []Job{boxed("image", 0), plain("plain", time.Second)},
			want:    map[string]string{"plain": "p1"},
			waiting: map[string][]string{"image": {"3 nodes run plain commands only and the job names a container image"}},
		},
		{
			name:    "a plain command waits on container nodes, and so does one of its shape",
			nodes:   []Node{node("c1", RunsContainers, 1), node("c2", RunsContainers, 1), node("c3", RunsContainers, 1)},
			pending: []Job{plain("plain", 0), boxed("image", time.Second), plain("twin", 2*time.Second)},
			want:    map[string]string{"image": "c1"},
			waiting: map[string][]string{"plain": {"3 nodes run containers only and the job runs a plain command"}, "twin": {"like job plain"}},
		},
		{
			name:    "an image that does not fit its kind's nodes waits, though a process node is free",
			nodes:   []Node{node("box", RunsContainers, 1), node("proc", RunsPlain, 4)},
			pending: []Job{boxed("first", 0), boxed("second", time.Second)},
			want:    map[string]string{"first": "box"},
			waiting: map[string][]string{"second": {"1 node runs plain commands only and the job names a container image", "1 node has fewer than 1 free GPU", "1 node held for it"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := schedule(t, Snapshot{Nodes: tc.nodes, Pending: tc.pending})
			got := map[string]string{}
			for _, p := range plan.Placements {
				got[p.JobID] = p.Replicas[0].NodeID
			}
			if len(got) != len(tc.want) {
				t.Fatalf("placed %v, want %v", got, tc.want)
			}
			for j, n := range tc.want {
				if got[j] != n {
					t.Fatalf("placed %v, want %v", got, tc.want)
				}
			}
			for j, parts := range tc.waiting {
				ex, ok := unplaced(plan, j)
				for _, part := range parts {
					if !ok || !strings.Contains(ex.Reason, part) {
						t.Errorf("job %s: explanation %q, want it to say %q", j, ex.Reason, part)
					}
				}
				if ex.Rejections[RejectRuntime] == 0 && !strings.HasPrefix(ex.Reason, "like job") {
					t.Errorf("job %s: rejections %v count no node under %q", j, ex.Rejections, RejectRuntime)
				}
			}
		})
	}
}

// A node that gives GPUs only whole (a Slurm node) takes whole-GPU jobs but never a
// share or a MIG slice, and says so.
func TestWholeGPUNodesTakeNoShares(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0).UTC()
	snap := Snapshot{Now: now, Nodes: []Node{{ID: "slurm", Pool: "hpc", WholeGPUs: true, CPUMilli: 8000, RAMMiB: 32768,
		GPUs: []GPU{{Index: 0, UUID: "g0", Model: "A100", MemoryMiB: 81920}, {Index: 1, UUID: "g1", Model: "A100", MemoryMiB: 81920}}}},
		Pending: []Job{
			{ID: "share", Team: "a", SubmitTime: now, Request: Request{GPUs: 1, GPUMilli: 500, GPUMemoryMiB: 10000, Replicas: 1, Class: "research"}},
			{ID: "whole", Team: "a", SubmitTime: now.Add(time.Second), Request: Request{GPUs: 1, Replicas: 1, Class: "research"}},
		}}
	plan, err := s.Schedule(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Placements) != 1 || plan.Placements[0].JobID != "whole" {
		t.Fatalf("placements = %+v", plan.Placements)
	}
	if len(plan.Unplaced) != 1 || !strings.Contains(plan.Unplaced[0].Explanation.Reason, "1 node gives GPUs only whole (Slurm nodes), not a share or a MIG slice") {
		t.Fatalf("unplaced = %+v", plan.Unplaced)
	}
	snap.Nodes[0].WholeGPUs = false
	if plan, _ = s.Schedule(snap); len(plan.Placements) != 2 {
		t.Fatalf("on a node that shares its GPUs: %+v", plan.Placements)
	}
}

// A share of a GPU is said as the submit form asks for it, "0.3 of a GPU", not in the
// scheduler's unit, milli-GPU.
func TestScheduleExplainsAShareInGPUs(t *testing.T) {
	full := runningOn(classJob("full", "a", "research", 1, t0), "n1", t0.Add(-time.Hour), 0)
	plan := schedule(t, Snapshot{
		Nodes:   []Node{gpuNode("n1", "A100", 1, 40960, 64000, 512<<10)},
		Running: []Allocation{full},
		Pending: []Job{{ID: "share", Team: "b", SubmitTime: t0, Request: Request{GPUs: 1, GPUMilli: 300, Replicas: 1, Class: "research"}}},
	})
	ex, ok := unplaced(plan, "share")
	if !ok {
		t.Fatal("a share placed on a busy GPU")
	}
	for _, part := range []string{"0.3 of a GPU", "1 node has no GPU with 0.3 of it free"} {
		if !strings.Contains(ex.Reason, part) {
			t.Errorf("reason %q lacks %q", ex.Reason, part)
		}
	}
	if strings.Contains(ex.Reason, "milli") {
		t.Errorf("reason %q speaks of milli-GPU", ex.Reason)
	}
}
