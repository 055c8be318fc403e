package slurm

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
)

func ended(state string, exit, signal int, final bool) Event {
	r := &Run{JobID: "11", State: state, ExitCode: exit, Signal: signal, Start: utc("2026-11-30T10:00:05"), End: utc("2026-11-30T10:01:05"), NodeList: "node1"}
	return Event{Kind: EventRunEnded, SlurmID: "11", Run: 1, Record: r, Final: final, Message: endedMessage("11", 1, *r, final)}
}

func steps(d Decision) string {
	var s []string
	for _, st := range d.Steps {
		x := st.To + ":" + st.Reason
		if st.ExitCode != nil {
			x += fmt.Sprintf("(%d)", *st.ExitCode)
		}
		if st.NextAttempt {
			x += "+attempt"
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func TestDecide(t *testing.T) {
	started := Event{Kind: EventStarted, SlurmID: "11", Run: 1, Message: "Slurm job 11 run 1 started on node1"}
	startedOver := started
	startedOver.Over = true
	pending := Event{Kind: EventPending, SlurmID: "11", Run: 1, Reason: "Resources", Message: "Slurm job 11 waits: Resources"}
	// sacct gives a job cancelled while pending a start time, the time of the cancel, but no node.
	neverRan := ended("CANCELLED", 0, 0, true)
	neverRan.Record.NodeList, neverRan.Record.End = "", neverRan.Record.Start
	held := Event{Kind: EventHeld, SlurmID: "11", Run: 1, Reason: "JobHeldAdmin", Message: pendingMessage("11", 0, "JobHeldAdmin")}
	vanished := Event{Kind: EventVanished, SlurmID: "11", Final: true, Message: "Slurm job 11 is unknown to Slurm"}
	cases := []struct {
		name, state string
		e           Event
		want        string
		note        bool
		charge      bool
		resubmit    bool
		cancel      bool
	}{
		{"start", models.JobScheduled, started, "running:started", false, false, false, false},
		{"start again", models.JobRunning, started, "", false, false, false, false},
		{"waits in Slurm", models.JobScheduled, pending, "", true, false, false, false},
		{"succeeded", models.JobRunning, ended("COMPLETED", 0, 0, true), "succeeded:succeeded(0)", false, true, false, false},
		{"failed", models.JobRunning, ended("FAILED", 3, 0, true), "failed:failed(3)", false, true, false, false},
		{"killed", models.JobRunning, ended("FAILED", 0, 9, true), "failed:failed(137)", false, true, false, false},
		{"time limit", models.JobRunning, ended("TIMEOUT", 0, 0, true), "failed:timeout(0)", false, true, false, false},
		{"out of memory", models.JobRunning, ended("OUT_OF_MEMORY", 0, 0, true), "failed:out-of-memory(0)", false, true, false, false},
		{"ran between polls", models.JobScheduled, ended("COMPLETED", 0, 0, true), "succeeded:succeeded(0)", false, true, false, false},
		{"cancelled in Slurm", models.JobRunning, ended("CANCELLED", 0, 15, true), "cancelled:cancelled(143)", false, true, false, false},
		{"preempted, requeued by Slurm", models.JobRunning, ended("PREEMPTED", 0, 0, false),
			"preempting:preempted queued:requeued scheduled:requeued+attempt", false, true, false, false},
		{"node failed, requeued by Slurm", models.JobRunning, ended("NODE_FAIL", 0, 0, false),
			"preempting:requeued queued:requeued scheduled:requeued+attempt", false, true, false, false},
		{"requeued while Gantry preempts", models.JobPreempting, ended("PREEMPTED", 0, 0, false), "queued:requeued scheduled:requeued+attempt", false, true, false, false},
		{"preempted for good", models.JobRunning, ended("PREEMPTED", 0, 0, true), "preempting:preempted queued:preempted", false, true, true, false},
		{"lost by Slurm", models.JobRunning, vanished, "queued:lost", false, false, true, false},
		{"lost while waiting", models.JobScheduled, vanished, "queued:lost", false, false, true, false},
		{"held in Slurm for Gantry", models.JobHeld, held, "", true, false, false, false},
		{"lost while held: it stays held", models.JobHeld, vanished, "", true, false, true, false},
		{"cancelled in Gantry, still running in Slurm", models.JobCancelled, started, "", false, false, false, true},
		{"cancelled in Gantry, a start seen after the run ended", models.JobCancelled, startedOver, "", false, false, false, false},
		{"cancelled in Gantry, then ended", models.JobCancelled, ended("CANCELLED", 0, 15, true), "", false, true, false, false},
		{"cancelled in Gantry while pending", models.JobCancelled, neverRan, "", false, false, false, false},
		{"cancelled in Slurm while pending", models.JobScheduled, neverRan, "cancelled:cancelled(0)", false, false, false, false},
	}
	for _, c := range cases {
		d, err := Decide(c.state, c.e)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := steps(d); got != c.want || (d.Note != "") != c.note || (d.Charge != nil) != c.charge || d.Resubmit != c.resubmit || d.Cancel != c.cancel {
			t.Errorf("%s: got %q note %q charge %v resubmit %v cancel %v", c.name, got, d.Note, d.Charge != nil, d.Resubmit, d.Cancel)
		}
	}
	d, _ := Decide(models.JobRunning, ended("PREEMPTED", 0, 0, false))
	if d.Steps[0].Message != "Slurm job 11 run 1 ended PREEMPTED after 0s; Slurm requeued it" || d.Steps[2].Message != "run 2 waits in Slurm as job 11" {
		t.Errorf("events name the Slurm job and run: %+v", d.Steps)
	}
}

// Whatever state the Gantry job is in, a decision only takes moves the job state
// machine allows, or says why it cannot.
func TestDecideOnlyTakesAllowedMoves(t *testing.T) {
	states := []string{models.JobQueued, models.JobScheduled, models.JobRunning, models.JobPreempting, models.JobHeld,
		models.JobSucceeded, models.JobFailed, models.JobCancelled}
	events := []Event{
		{Kind: EventStarted, SlurmID: "1"}, {Kind: EventPending, SlurmID: "1"}, {Kind: EventHeld, SlurmID: "1"},
		{Kind: EventUnreadable, SlurmID: "1"}, {Kind: EventVanished, SlurmID: "1"},
	}
	for _, st := range []string{"COMPLETED", "FAILED", "CANCELLED", "PREEMPTED", "NODE_FAIL", "TIMEOUT"} {
		events = append(events, ended(st, 1, 0, true), ended(st, 0, 0, false))
	}
	for _, state := range states {
		for _, e := range events {
			d, err := Decide(state, e)
			from := state
			for _, s := range d.Steps {
				if !models.CanTransition(from, s.To) && err == nil {
					t.Errorf("%s + %s %s: %s -> %s taken", state, e.Kind, e.State, from, s.To)
				}
				from = s.To
			}
			if err != nil && !strings.Contains(err.Error(), "cannot move to") {
				t.Errorf("%s + %s: unclear error %v", state, e.Kind, err)
			}
		}
	}
	if _, err := Decide(models.JobHeld, ended("COMPLETED", 0, 0, true)); err == nil || !strings.Contains(err.Error(), "a Gantry job held cannot move to succeeded") {
		t.Errorf("a held job cannot have succeeded: %v", err)
	}
	if _, err := Decide(models.JobRunning, Event{Kind: EventRunEnded, SlurmID: "1"}); err == nil {
		t.Error("a run end without its record is an error")
	}
}

func TestSpecOf(t *testing.T) {
	j := models.Job{ID: 8, Name: "train", Command: `["python","train.py","--lr","0.1"]`, Env: `{"SEED":"1"}`, GPUs: 2,
		CPUMilli: 4000, MemoryMiB: 8192, Replicas: 1, PriorityClass: "research"}
	class := models.PriorityClass{Name: "research", CheckpointGraceSec: 120, MaxRunTimeSec: 86400}
	s, err := SpecOf(j, 3, class, "A100-80GB", "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.Command) != "[python train.py --lr 0.1]" || s.Env["SEED"] != "1" || s.Attempt != 3 || s.GPUModel != "A100-80GB" ||
		s.TimeLimit.Hours() != 24 || s.CheckpointGrace.Seconds() != 120 || s.GPUs != 2 || s.MemoryMiB != 8192 {
		t.Errorf("spec %+v", s)
	}
	j.Command = `python train.py`
	if _, err := SpecOf(j, 1, class, "", ""); err == nil || !strings.Contains(err.Error(), "command: of job 8 is not a JSON array") {
		t.Errorf("bad command: %v", err)
	}
}

func TestGantryNode(t *testing.T) {
	nodes, err := parseSinfoNodes(readFixture(t, "sinfo_busy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Partition: "gpu", GRESTypes: map[string]string{"A100-80GB": "a100"}}
	nodes[0].Cluster = "gantry"
	n, devs := GantryNode("hpc", cfg, nodes[0])
	if n.Name != "hpc.node1" || n.State != models.NodeReady || n.Runtime != models.RuntimeSlurm || n.CPUMilli != 8000 || n.MemoryMiB != 8192 ||
		n.CredentialHash != "" || n.Labels != `{"slurm.cluster":"gantry","slurm.node":"node1","slurm.partition":"gpu"}` {
		t.Errorf("node %+v", n)
	}
	var got []string
	for _, d := range devs {
		got = append(got, fmt.Sprintf("%d %s %s %d", d.Index, d.UUID, d.Model, d.MemoryMiB))
	}
	// a100 is named by gres_types; l4 is not, so it keeps Slurm's name and no known memory.
	want := "0 slurm:hpc:node1:0 A100-80GB 81920|1 slurm:hpc:node1:1 A100-80GB 81920|2 slurm:hpc:node1:2 l4 0|3 slurm:hpc:node1:3 l4 0"
	if strings.Join(got, "|") != want {
		t.Errorf("devices\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// A node that sinfo lists in two partitions is a Gantry node in the pool of each,
// and both are known for one machine, whose capacity counts once, though the pools
// reach the cluster by two slurm.conf paths; the node of the same name on another
// cluster is another machine, though its pool reads a slurm.conf of the same path.
func TestNodeInTwoPartitionsIsOneMachine(t *testing.T) {
	nodes, err := parseSinfoNodes(readFixture(t, "sinfo_busy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !reflect.DeepEqual(nodes[0].Partitions, []string{"gpu", "debug"}) {
		t.Fatalf("sinfo lists node1 once per partition; want one node in both: %+v", nodes)
	}
	var gantry []models.Node
	node := nodes[0]
	node.Cluster = "gantry"
	for i, part := range node.Partitions {
		n, devs := GantryNode("pool-"+part, Config{Partition: part, SlurmConf: "/etc/slurm-" + part + "/slurm.conf"}, node)
		if len(devs) != 4 {
			t.Fatalf("%s: %d GPUs, want 4", n.Name, len(devs))
		}
		n.ID = int64(10 + i)
		gantry = append(gantry, n)
	}
	node.Cluster = "elsewhere"
	other, _ := GantryNode("elsewhere", Config{Partition: "gpu", SlurmConf: "/etc/slurm-gpu/slurm.conf"}, node)
	other.ID = 5
	gantry = append(gantry, other)
	got := models.SharedSlurmNodes(gantry)
	if want := map[int64]int64{10: 10, 11: 10}; !reflect.DeepEqual(got, want) {
		t.Errorf("shared nodes %v, want %v (pool-gpu.node1 and pool-debug.node1 as one, elsewhere.node1 apart)", got, want)
	}
}

func TestNodeState(t *testing.T) {
	for _, c := range []struct{ state, reason, want, why string }{
		{"idle", "", models.NodeReady, "Slurm: idle"},
		{"mixed", "", models.NodeReady, "Slurm: mixed"},
		{"idle~", "", models.NodeReady, "Slurm: idle"},
		{"drained", "bad fan", models.NodeCordoned, "Slurm: drained (bad fan)"},
		{"draining", "", models.NodeCordoned, "Slurm: draining"},
		{"down*", "Not responding", models.NodeDown, "Slurm: down* (Not responding): slurmd is not responding"},
		{"idle*", "", models.NodeDown, "Slurm: idle*: slurmd is not responding"},
		{"down", "reboot", models.NodeDown, "Slurm: down (reboot)"},
		{"future", "", models.NodeDown, "Slurm: future"},
	} {
		if got, why := nodeState(c.state, c.reason); got != c.want || why != c.why {
			t.Errorf("nodeState(%q, %q) = %s %q; want %s %q", c.state, c.reason, got, why, c.want, c.why)
		}
	}
}

// A pool whose configuration says its nodes' GPUs are joined by NVLink gives each GPU
// every other of its model as a peer; Slurm's inventory alone gives none.
func TestGantryNodeNVLink(t *testing.T) {
	nodes, err := parseSinfoNodes(readFixture(t, "sinfo_busy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Partition: "gpu", GRESTypes: map[string]string{"A100-80GB": "a100"}}
	_, devs := GantryNode("hpc", cfg, nodes[0])
	for _, d := range devs {
		if d.NVLinkPeers != "" {
			t.Errorf("GPU %d has peers %s without nvlink in the pool's configuration", d.Index, d.NVLinkPeers)
		}
	}
	cfg.NVLink = true
	_, devs = GantryNode("hpc", cfg, nodes[0])
	var got []string
	for _, d := range devs {
		got = append(got, d.NVLinkPeers)
	}
	// Cards 0-1 are a100, 2-3 l4: each joined to the other of its model.
	if want := []string{"[1]", "[0]", "[3]", "[2]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("peers %v, want %v", got, want)
	}
}
