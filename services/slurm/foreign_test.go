package slurm

import (
	"fmt"
	"testing"
	"time"
)

func TestGPUsPerNode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gres:gpu:a100:2", "[{a100 2}]"},
		{"gres/gpu:a100=2", "[{a100 2}]"},
		{"gres:gpu:2", "[{ 2}]"},
		{"gres/gpu=1,gres/nvme=3", "[{ 1}]"},
		{"cpu=4", "[]"},
		{"", "[]"},
	} {
		got, err := GPUsPerNode(c.in)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("GPUsPerNode(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := GPUsPerNode("gres:gpu:a100:two"); err == nil {
		t.Error("a count that is not a number should be an error")
	}
}

func TestForeignJob(t *testing.T) {
	jobs, bad := parseSqueue(readFixture(t, "squeue_mixed.txt"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	cfg := Config{Partition: "gpu", GRESTypes: map[string]string{"A100-80GB": "a100"}}
	var running, pending Job
	for _, j := range jobs {
		switch j.ID {
		case "4":
			running = j
		case "6":
			pending = j
		}
	}
	f, err := ForeignJob("hpc", cfg, running)
	if err != nil {
		t.Fatal(err)
	}
	if f.SlurmJobID != "4" || f.Name != "name with | and spaces" || f.State != "RUNNING" || f.Nodes != `["hpc.node1"]` || f.GPUs != 2 ||
		f.GPUModel != "A100-80GB" || f.CPUs != 2 || f.MemoryMiB != 1024 || f.QOS != "test" || f.User != "root" || f.StartedAt == nil ||
		!f.StartedAt.Equal(time.Date(2026, 11, 30, 0, 45, 55, 0, time.UTC)) {
		t.Errorf("running job outside Gantry: %+v", f)
	}
	f, err = ForeignJob("hpc", cfg, pending)
	if err != nil {
		t.Fatal(err)
	}
	// l4 has no gres_types entry: its model keeps Slurm's name.
	if f.State != "PENDING" || f.Reason != "Priority" || f.Nodes != "[]" || f.GPUs != 2 || f.GPUModel != "l4" || f.StartedAt != nil {
		t.Errorf("pending job outside Gantry: %+v", f)
	}
	running.NodeList = "node[3-1]"
	if _, err := ForeignJob("hpc", cfg, running); err == nil {
		t.Error("an unreadable node list should be an error")
	}
}

func TestJobEnded(t *testing.T) {
	for state, want := range map[string]bool{"RUNNING": false, "PENDING": false, "COMPLETING": false, "COMPLETED": true, "CANCELLED": true, "PREEMPTED": true, "BOGUS": false} {
		if got := (Job{State: state}).Ended(); got != want {
			t.Errorf("a %s job ended: %v, want %v", state, got, want)
		}
	}
}
