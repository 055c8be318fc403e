package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gantry-gpu/gantry/models"
)

// fakeRunner answers commands from a function and records them.
type fakeRunner struct {
	mu     sync.Mutex
	answer func(name string, args []string) ([]byte, error)
	calls  []string
	stdins []string
}

func (f *fakeRunner) Run(_ context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	f.stdins = append(f.stdins, string(stdin))
	answer := f.answer
	f.mu.Unlock()
	return answer(name, args)
}

func (f *fakeRunner) called(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func failed(name, stderr string) error { return &CommandError{Name: name, ExitCode: 1, Stderr: stderr} }

func newFakeBackend(t *testing.T, answer func(name string, args []string) ([]byte, error)) (*Backend, *fakeRunner) {
	t.Helper()
	r := &fakeRunner{answer: answer}
	b, err := New(testConfig(t.TempDir()), r)
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

func TestSubmitSendsTheScriptAndReturnsTheID(t *testing.T) {
	b, r := newFakeBackend(t, func(name string, args []string) ([]byte, error) {
		switch name {
		case "squeue", "sacct":
			return nil, nil
		case "sbatch":
			return []byte("4242\n"), nil
		}
		return nil, fmt.Errorf("unexpected %s", name)
	})
	id, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}})
	if err != nil || id != "4242" {
		t.Fatalf("got %q, %v", id, err)
	}
	if r.called("squeue -h --me -t all -n gantry-7-1") != 1 || r.called("sacct -X -n -P -S now-30days --name=gantry-7-1") != 1 || r.called("sbatch --parsable --job-name=gantry-7-1") != 1 {
		t.Errorf("calls: %q", r.calls)
	}
	if !strings.Contains(r.stdins[2], "#!/bin/bash\n# Gantry job 7 attempt 1") {
		t.Errorf("script: %q", r.stdins[2])
	}
	if _, err := os.Stat(b.Config().CheckpointPath(7)); err != nil {
		t.Errorf("the checkpoint directory should exist before the job starts: %v", err)
	}
}

// A retry after a lost answer must find the job it submitted, not submit again.
func TestSubmitIsIdempotent(t *testing.T) {
	for _, from := range []string{"squeue", "sacct"} {
		b, r := newFakeBackend(t, func(name string, args []string) ([]byte, error) {
			if name == from {
				return []byte("77\n77\n"), nil
			}
			return nil, nil
		})
		id, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}})
		if err != nil || id != "77" || r.called("sbatch") != 0 {
			t.Errorf("found by %s: got %q, %v; calls %q", from, id, err, r.calls)
		}
	}
	b, _ := newFakeBackend(t, func(name string, args []string) ([]byte, error) { return []byte("77\n78\n"), nil })
	if _, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "two jobs of one Gantry attempt") {
		t.Errorf("two Slurm jobs for one attempt must not be papered over: %v", err)
	}
}

func TestSubmitFailures(t *testing.T) {
	rejections := sections(t, "sbatch_rejections.txt")
	down := sections(t, "ctld_down.txt")
	cases := []struct {
		name      string
		answer    func(name string, args []string) ([]byte, error)
		transient bool
		reason    string
	}{
		{"bad partition", func(name string, _ []string) ([]byte, error) {
			if name == "sbatch" {
				return nil, failed(name, rejections["sbatch -p nosuch"])
			}
			return nil, nil
		}, false, "sbatch rejected by Slurm: Invalid partition name specified"},
		{"over a limit", func(name string, _ []string) ([]byte, error) {
			if name == "sbatch" {
				return nil, failed(name, rejections["sbatch -c 64"])
			}
			return nil, nil
		}, false, "More processors requested than permitted"},
		{"controller down", func(name string, _ []string) ([]byte, error) {
			return nil, failed(name, down["squeue"])
		}, true, "look for an earlier submission of gantry-7-1: slurm unavailable: squeue: Unable to contact slurm controller (connect failure)"},
		{"sbatch lost", func(name string, _ []string) ([]byte, error) {
			if name == "sbatch" {
				return nil, failed(name, down["sbatch"])
			}
			return nil, nil
		}, true, "Unable to contact slurm controller"},
		{"garbled answer", func(name string, _ []string) ([]byte, error) {
			if name == "sbatch" {
				return []byte("Submitted batch job 12\n"), nil
			}
			return nil, nil
		}, true, `cannot parse sbatch output "Submitted batch job 12"`},
		{"not installed", func(name string, _ []string) ([]byte, error) {
			return nil, fmt.Errorf("%w: squeue is not installed", ErrUnavailable)
		}, true, "squeue is not installed"},
	}
	for _, c := range cases {
		b, _ := newFakeBackend(t, c.answer)
		_, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}})
		if err == nil || Transient(err) != c.transient || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: got %v (transient %v), want %q transient %v", c.name, err, Transient(err), c.reason, c.transient)
		}
	}
	// Accounting down does not block a submission: squeue's answer stands.
	b, r := newFakeBackend(t, func(name string, _ []string) ([]byte, error) {
		switch name {
		case "sacct":
			return nil, failed(name, sections(t, "dbd_down.txt")["sacct (slurmdbd down)"])
		case "sbatch":
			return []byte("9\n"), nil
		}
		return nil, nil
	})
	if id, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}}); err != nil || id != "9" || r.called("sbatch") != 1 {
		t.Errorf("with slurmdbd down: %q %v", id, err)
	}
	// A bad spec never reaches Slurm.
	b, r = newFakeBackend(t, func(string, []string) ([]byte, error) { return nil, nil })
	_, err := b.Submit(context.Background(), JobSpec{JobID: 7, Attempt: 1, Command: []string{"true"}, GPUMilli: 500})
	var fe *models.FieldError
	if !errors.As(err, &fe) || fe.Field != "gpu_milli" || len(r.calls) != 0 {
		t.Errorf("fractional GPU: %v, calls %q", err, r.calls)
	}
}

func TestControlCommands(t *testing.T) {
	errs := sections(t, "control_errors.txt")
	// What squeue says each id is: state, user and name.
	jobs := map[string]string{
		"1": "COMPLETED\x1froot\x1fgantry-10-1", "3": "CANCELLED\x1froot\x1fgantry-30-1", "5": "RUNNING\x1froot\x1fgantry-50-1",
		"6": "PENDING\x1froot\x1fgantry-60-1", "7": "PENDING\x1froot\x1fgantry-70-1", "8": "RUNNING\x1fbob\x1ftrain \"big\"",
	}
	b, r := newFakeBackend(t, func(name string, args []string) ([]byte, error) {
		switch {
		case name == "scontrol" && args[1] == "1":
			return nil, failed(name, errs["scontrol hold 1"])
		case name == "squeue" && args[5] == "-o" && jobs[args[4]] == "":
			return nil, failed(name, errs["squeue -j 999"])
		case name == "squeue" && args[5] == "-o":
			return []byte(jobs[args[4]] + "\n"), nil
		case name == "squeue" && args[4] == "6":
			return []byte("2                   \n"), nil
		case name == "squeue":
			return []byte("RESTART_COUNT\n"), nil
		}
		return nil, nil
	})
	ctx := context.Background()
	if err := os.MkdirAll(b.Config().LogDir, 0o755); err != nil { // as the job's submission made it
		t.Fatal(err)
	}
	if err := b.Cancel(ctx, "5", 50, 1); err != nil {
		t.Error(err)
	}
	if err := b.Checkpoint(ctx, "5", 50, 1); err != nil {
		t.Error(err)
	}
	if err := b.Hold(ctx, "6", 60, 1); err != nil {
		t.Error(err)
	}
	if err := b.Release(ctx, "6", 60, 1, 4); err != nil {
		t.Error(err)
	}
	// Slurm requeued job 6 twice: its runs from the next on are attempts 4, 5, ...
	if got, err := os.ReadFile(b.Config().AttemptPath(60, 1)); err != nil || string(got) != "4 2\n" {
		t.Errorf("attempt file of the released job: %q, %v", got, err)
	}
	if err := b.Release(ctx, "7", 70, 1, 2); !Transient(err) || !strings.Contains(err.Error(), "restart_count") {
		t.Errorf("release when squeue's answer cannot be read: %v, want a transient error naming restart_count", err)
	}
	err := b.Hold(ctx, "1", 10, 1)
	var re *RejectedError
	if !errors.As(err, &re) || err.Error() != "hold Slurm job 1: scontrol hold rejected by Slurm: Job has already finished" {
		t.Errorf("hold of a finished job: %v", err)
	}
	// A job that ended, or that slurmctld no longer holds, needs no scancel.
	for _, id := range []string{"3", "999"} {
		if err := b.Cancel(ctx, id, 30, 1); err != nil {
			t.Errorf("cancel of Slurm job %s: %v", id, err)
		}
	}
	want := []string{
		"squeue -h -t all -j 5 -o %T\x1f%u\x1f%j", "scancel --name=gantry-50-1 5",
		"squeue -h -t all -j 5 -o %T\x1f%u\x1f%j", "scancel --batch --signal=USR1 --name=gantry-50-1 5",
		"squeue -h -t all -j 6 -o %T\x1f%u\x1f%j", "scontrol hold 6",
		"squeue -h -t all -j 6 -o %T\x1f%u\x1f%j", "squeue -h -t all -j 6 -O restartcnt", "scontrol release 6",
		"squeue -h -t all -j 7 -o %T\x1f%u\x1f%j", "squeue -h -t all -j 7 -O restartcnt",
		"squeue -h -t all -j 1 -o %T\x1f%u\x1f%j", "scontrol hold 1",
		"squeue -h -t all -j 3 -o %T\x1f%u\x1f%j", "squeue -h -t all -j 999 -o %T\x1f%u\x1f%j",
	}
	if strings.Join(r.calls, "|") != strings.Join(want, "|") {
		t.Errorf("calls %q", r.calls)
	}

	// Slurm job 8 is not Gantry's job 80 attempt 1 (Slurm's ids restarted): nothing is
	// done to it, and the error says why, whatever was asked.
	r.calls = nil
	acts := map[string]func() error{
		"cancelled":               func() error { return b.Cancel(ctx, "8", 80, 1) },
		"held":                    func() error { return b.Hold(ctx, "8", 80, 1) },
		"released":                func() error { return b.Release(ctx, "8", 80, 1, 2) },
		"signalled to checkpoint": func() error { return b.Checkpoint(ctx, "8", 80, 1) },
	}
	for action, act := range acts {
		err := act()
		var other *OtherJobError
		if !errors.As(err, &other) || Transient(err) || err.Error() != "Slurm job 8 not "+action+": that id is no longer gantry-80-1, which Gantry submitted, "+
			"but another job, \"train big\" of user bob (Slurm's job ids restarted, or someone renamed the job); Gantry leaves that job alone" {
			t.Errorf("%s: %v", action, err)
		}
	}
	if len(r.calls) != len(acts) || r.called("squeue -h -t all -j 8 -o") != len(acts) {
		t.Errorf("calls on another job's id: %q, want squeue only", r.calls)
	}
}

func TestPingAndInventory(t *testing.T) {
	down := sections(t, "ctld_down.txt")["scontrol ping"]
	b, _ := newFakeBackend(t, func(name string, args []string) ([]byte, error) {
		return nil, &CommandError{Name: name, ExitCode: 1, Stdout: down}
	})
	if err := b.Ping(context.Background()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "Slurmctld(primary) at vm is DOWN") {
		t.Errorf("ping: %v", err)
	}
	b, r := newFakeBackend(t, func(name string, args []string) ([]byte, error) {
		switch name + " " + args[0] {
		case "scontrol ping":
			return []byte("Slurmctld(primary) at vm is UP\n"), nil
		case "scontrol show":
			if args[1] == "config" {
				return readFixture(t, "show_config.txt"), nil
			}
			return []byte(strings.Split(string(readFixture(t, "partitions.txt")), "\n")[0]), nil
		case "sinfo -N":
			return readFixture(t, "sinfo_busy.txt"), nil
		}
		return nil, fmt.Errorf("unexpected %s %q", name, args)
	})
	if err := b.Ping(context.Background()); err != nil {
		t.Error(err)
	}
	inv, err := b.Inventory(context.Background())
	if err != nil || inv.Cluster != "gantry" || inv.Partition.Name != "gpu" || inv.Partition.GPUs != 4 || len(inv.Nodes) != 1 ||
		inv.Nodes[0].GPUs[0] != (GRES{"a100", 2}) || inv.Nodes[0].Cluster != "gantry" {
		t.Errorf("inventory %+v, %v", inv, err)
	}
	if r.called("scontrol show config") != 1 || r.called("scontrol show partition -o gpu") != 1 || r.called("sinfo -N -h -p gpu -O NodeList:0") != 1 {
		t.Errorf("calls %q", r.calls)
	}
	b, _ = newFakeBackend(t, func(name string, args []string) ([]byte, error) {
		if name == "scontrol" && args[1] == "config" {
			return readFixture(t, "show_config.txt"), nil
		}
		return readFixture(t, "partitions.txt"), nil // both partitions: not the one asked for alone
	})
	if _, err := b.Inventory(context.Background()); err == nil || !strings.Contains(err.Error(), "want exactly that partition") {
		t.Errorf("inventory of the wrong partition: %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(`{"partition":"gpu","log_dir":"/shared/logs","checkpoint_dir":"/shared/ckpt","qos":{"production":"high"},"gres_types":{"A100-80GB":"a100"}}`)
	if err != nil || c.Partition != "gpu" || c.QOS["production"] != "high" || c.CommandTimeout().Seconds() != 30 {
		t.Fatalf("got %+v, %v", c, err)
	}
	if c.ModelOf("a100") != "A100-80GB" || c.ModelOf("l4") != "l4" {
		t.Errorf("ModelOf")
	}
	bad := map[string]string{
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","extra":1}`:                          "provider_config",
		`{"partition":"gpu p","log_dir":"/l","checkpoint_dir":"/c"}`:                                  "partition",
		`{"partition":"gpu","log_dir":"logs","checkpoint_dir":"/c"}`:                                  "log_dir",
		`{"partition":"gpu","log_dir":"/l"}`:                                                          "checkpoint_dir",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","gpu_option":"both"}`:                "gpu_option",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","container":"docker"}`:               "container",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","qos":{"test":"a b"}}`:               "qos",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","gres_types":{"A100-80GB":"gpu:a"}}`: "gres_types",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","command_timeout_sec":9999}`:         "command_timeout_sec",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","bin_dir":"bin"}`:                    "bin_dir",
		`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","container_mounts":["/d:/d"]}`:       "container_mounts",
	}
	for _, m := range []string{"/d", "d:/d", "/d:d", "/d:/d:", "/d:/d:ro+", "/d:/d:RO", "/a,/b:/b", "/d e:/d", "/d:/d:ro:x", "/d/../e:/d", "/d:/d;rm"} {
		raw := `{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","container":"pyxis","container_mounts":["` + m + `"]}`
		bad[raw] = "container_mounts"
	}
	if c, err := ParseConfig(`{"partition":"gpu","log_dir":"/l","checkpoint_dir":"/c","container":"pyxis","container_mounts":["/datasets:/data:ro+rprivate","/s:/s"]}`); err != nil ||
		len(c.ContainerMounts) != 2 {
		t.Errorf("mounts: %+v, %v", c, err)
	}
	for raw, field := range bad {
		_, err := ParseConfig(raw)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: got %v, want field %s", raw, err, field)
		}
	}
}
