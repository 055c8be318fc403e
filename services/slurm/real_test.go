package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/slurm/slurmtest"
)

// These tests run on the throw-away Slurm of scripts/slurm.sh (make test exports
// GANTRY_TEST_SLURM_CONF): one node with 2 a100 and 2 l4 GPUs by GRES, QOS test <
// research < production with preempt/qos, a 5 s grace time and requeue.

// realSlurm returns a backend on that Slurm, held for the test (slurmtest.Conf), or
// skips (fails when GANTRY_REQUIRE_SLURM=1) when there is none. The tests run in
// parallel: each waits for a cluster of its own.
func realSlurm(t *testing.T) (*Backend, string) {
	t.Helper()
	conf := slurmtest.Conf(t)
	dir := t.TempDir()
	cfg := Config{
		Partition: "gpu", SlurmConf: conf, LogDir: dir + "/logs", CheckpointDir: dir + "/ckpt",
		QOS:       map[string]string{"production": "production", "research": "research", "test": "test"},
		GRESTypes: map[string]string{"A100-80GB": "a100", "L4-24GB": "l4"},
	}
	b, err := New(cfg, NewExecRunner("", conf, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return b, conf
}

var jobIDs atomic.Int64

// nextJobID is a Gantry job id no earlier run of the tests used: Submit finds earlier
// submissions of the same id and attempt, by design.
func nextJobID() int64 {
	jobIDs.CompareAndSwap(0, time.Now().Unix()%100000000*100)
	return jobIDs.Add(1)
}

// watch runs a follower on b and sorts its events by Slurm job.
type watch struct {
	f  *Follower
	mu sync.Mutex
	ch map[string]chan Event
}

func follow(t *testing.T, b *Backend) *watch {
	w := &watch{f: NewFollower(b, FollowConfig{Interval: 300 * time.Millisecond, MaxBackoff: 2 * time.Second, LostAfter: 5 * time.Minute}, time.Now),
		ch: map[string]chan Event{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.f.Run(ctx, func(_ context.Context, e Event) error {
			w.events(e.SlurmID) <- e
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w *watch) events(id string) chan Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch[id] == nil {
		w.ch[id] = make(chan Event, 100)
	}
	return w.ch[id]
}

// submit submits and follows a job, and cancels it when the test ends.
func (w *watch) submit(t *testing.T, b *Backend, s JobSpec) string {
	t.Helper()
	id, err := b.Submit(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	w.f.Track(Tracked{SlurmID: id, JobID: s.JobID, Attempt: s.Attempt, Submitted: s.Attempt})
	t.Cleanup(func() { _ = b.Cancel(context.Background(), id, s.JobID, s.Attempt) })
	return id
}

// next waits for the job's next event other than unreadable (sacct may lag).
func (w *watch) next(t *testing.T, id string) Event {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case e := <-w.events(id):
			t.Logf("job %s: %s: %s", id, e.Kind, e.Message)
			if e.Kind != EventUnreadable {
				return e
			}
		case <-timeout:
			t.Fatalf("no event for Slurm job %s in 90 s; health %+v", id, w.f.Health())
		}
	}
}

func (w *watch) expect(t *testing.T, id string, kind EventKind) Event {
	t.Helper()
	e := w.next(t, id)
	if e.Kind != kind {
		t.Fatalf("Slurm job %s: got %s (%s), want %s", id, e.Kind, e.Message, kind)
	}
	return e
}

// untilStarted skips pending events.
func (w *watch) untilStarted(t *testing.T, id string) Event {
	t.Helper()
	for {
		if e := w.next(t, id); e.Kind != EventPending {
			if e.Kind != EventStarted {
				t.Fatalf("Slurm job %s: got %s (%s), want it started", id, e.Kind, e.Message)
			}
			return e
		}
	}
}

// untilEnded skips pending and started events.
func (w *watch) untilEnded(t *testing.T, id string) Event {
	t.Helper()
	for {
		switch e := w.next(t, id); e.Kind {
		case EventPending, EventStarted:
		case EventRunEnded:
			return e
		default:
			t.Fatalf("Slurm job %s: got %s (%s), want its run ended", id, e.Kind, e.Message)
		}
	}
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := ReadLog(path, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRealInventory(t *testing.T) {
	t.Parallel()
	b, _ := realSlurm(t)
	if err := b.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	inv, err := b.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := inv.Nodes
	// The controller's ClusterName, whatever slurm.conf the commands read.
	if inv.Cluster != "gantry" || len(n) != 1 || n[0].Cluster != "gantry" {
		t.Errorf("cluster %q, nodes %+v; want gantry's", inv.Cluster, n)
	}
	if inv.Partition.Name != "gpu" || !inv.Partition.Default || inv.Partition.GPUs != 4 || len(n) != 1 || n[0].Name != "node1" ||
		n[0].CPUs != 8 || n[0].MemoryMiB != 8192 || fmt.Sprint(n[0].GPUs) != "[{a100 2} {l4 2}]" || fmt.Sprint(n[0].Partitions) != "[gpu]" {
		t.Errorf("inventory %+v", inv)
	}
	if b.Config().ModelOf(n[0].GPUs[0].Type) != "A100-80GB" {
		t.Errorf("a100 should show as Gantry's A100-80GB")
	}
}

func TestRealJobsSucceedAndFailWithLogsAndAccounting(t *testing.T) {
	t.Parallel()
	b, _ := realSlurm(t)
	w := follow(t, b)
	okJob, failJob := nextJobID(), nextJobID()
	ok := w.submit(t, b, JobSpec{JobID: okJob, Attempt: 1, Name: "hello", PriorityClass: "research", GPUs: 1, GPUModel: "A100-80GB",
		CPUMilli: 1000, MemoryMiB: 100, TimeLimit: 5 * time.Minute, Env: map[string]string{"GREETING": "hello"},
		Command: []string{"sh", "-c", `echo "$GREETING from job $GANTRY_JOB_ID on GPU $CUDA_VISIBLE_DEVICES"; echo warning >&2; sleep 2`}})
	bad := w.submit(t, b, JobSpec{JobID: failJob, Attempt: 1, Name: "fails", Command: []string{"sh", "-c", "echo failing; exit 3"}})

	started := w.untilStarted(t, ok)
	if started.NodeList != "node1" || started.Run != 1 {
		t.Errorf("started %+v", started)
	}
	end := w.expect(t, ok, EventRunEnded)
	r := end.Record
	// slurmdbd can record a run's end state before its end time (seen on a loaded
	// machine): End is then zero, and the run is charged until it was seen ended.
	if !end.Final || r.State != "COMPLETED" || r.ExitCode != 0 || r.Elapsed < 2*time.Second || r.Alloc.GPUs != 1 ||
		r.Alloc.GPUsByType["a100"] != 1 || r.Alloc.CPUs != 1 || r.Alloc.MemoryMiB != 100 || r.QOS != "research" || r.Start.IsZero() ||
		!r.End.IsZero() && r.End.Before(r.Start) {
		t.Errorf("accounting record %+v", r)
	}
	stdout, stderr := b.Config().LogPaths(okJob, 1)
	if got := readLog(t, stdout); got != fmt.Sprintf("hello from job %d on GPU 0\n", okJob) {
		t.Errorf("stdout %q", got)
	}
	if got := readLog(t, stderr); got != "warning\n" {
		t.Errorf("stderr %q", got)
	}
	if got, _ := ReadLog(stdout, 6, 4); string(got) != "from" {
		t.Errorf("reading from an offset: %q", got)
	}

	// A job that fails at once may end between two polls: it need not be seen running.
	end = w.untilEnded(t, bad)
	if !end.Final || end.Record.State != "FAILED" || end.Record.ExitCode != 3 || !strings.Contains(end.Message, "FAILED after") {
		t.Errorf("failed job %+v %+v", end, end.Record)
	}
}

// A Slurm job id Gantry tracks for one job, held by another (as when Slurm's ids
// restart): the tracked job is lost at once, and the other is shown as foreign.
func TestRealJobIDOfAnotherJob(t *testing.T) {
	t.Parallel()
	b, _ := realSlurm(t)
	w := follow(t, b)
	theirs, ours := nextJobID(), nextJobID()
	id, err := b.Submit(context.Background(), JobSpec{JobID: theirs, Attempt: 1, Command: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Cancel(context.Background(), id, theirs, 1) })
	w.f.Track(Tracked{SlurmID: id, JobID: ours, Attempt: 1, Submitted: 1})
	// squeue lists the other job under the id from its submission on, so the first poll
	// finds Gantry's gone, whatever slurmdbd has of the other job yet: nothing, a
	// nameless placeholder (its partition empty), or its full record. Nothing here is
	// left to Slurm's timing, so no other event may come first.
	e := w.expect(t, id, EventVanished)
	cfg := b.Config()
	if !e.Final || e.JobID != ours || !strings.Contains(e.Message, cfg.SlurmName(ours, 1)+", which Gantry submitted") ||
		!strings.Contains(e.Message, fmt.Sprintf("another job, %q of user ", cfg.SlurmName(theirs, 1))) {
		t.Errorf("vanished %+v", e)
	}
	foreign := false
	for _, j := range w.f.Foreign() {
		foreign = foreign || j.ID == id
	}
	if !foreign {
		t.Errorf("Slurm job %s is not the tracked job's: foreign %+v", id, w.f.Foreign())
	}
}

// Gantry's record of a job points at a Slurm job id that another job holds now, one
// submitted outside Gantry (as when Slurm's ids restart): cancel, hold, release and
// checkpoint each refuse, saying whose job it is, and the other job runs on, not
// held, not signalled.
func TestRealActionsSpareAnotherJobUnderTheID(t *testing.T) {
	t.Parallel()
	b, conf := realSlurm(t)
	ctx := context.Background()
	dir := t.TempDir()
	signals, ready := filepath.Join(dir, "signals"), filepath.Join(dir, "ready")
	// The script says when its traps are set: Slurm says RUNNING before bash has read
	// them, and a USR2 before them would end it instead.
	script := "#!/bin/bash\ntrap 'echo USR1 >> " + signals + "' USR1\ntrap 'echo USR2 >> " + signals + "' USR2\ntouch " + ready +
		"\nwhile :; do sleep 0.2; done\n"
	slurmCmd := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.WriteFile(filepath.Join(dir, "theirs.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	id := slurmCmd("sbatch", "--parsable", "-p", "gpu", "-J", "theirs", "-c", "1", "--mem=100M", "-o", "/dev/null", filepath.Join(dir, "theirs.sh"))
	t.Cleanup(func() {
		cmd := exec.Command("scancel", id)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		_ = cmd.Run()
	})
	state := func() string { return slurmCmd("squeue", "-h", "-t", "all", "-j", id, "-o", "%T %r") }
	deadline := time.Now().Add(90 * time.Second)
	for state() != "RUNNING None" {
		if time.Now().After(deadline) {
			t.Fatalf("the other job does not run: %q", state())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
		if time.Now().After(deadline) {
			t.Fatalf("the other job's script did not set its traps: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ours := nextJobID()
	name := b.Config().SlurmName(ours, 1)
	acts := []struct {
		action string
		act    func() error
	}{
		{"signalled to checkpoint", func() error { return b.Checkpoint(ctx, id, ours, 1) }},
		{"held", func() error { return b.Hold(ctx, id, ours, 1) }},
		{"released", func() error { return b.Release(ctx, id, ours, 1, 2) }},
		{"cancelled", func() error { return b.Cancel(ctx, id, ours, 1) }},
	}
	for _, a := range acts {
		err := a.act()
		var other *OtherJobError
		if !errors.As(err, &other) || other.Name != "theirs" || other.User == "" ||
			!strings.Contains(err.Error(), "Slurm job "+id+" not "+a.action+": that id is no longer "+name+", which Gantry submitted, but another job, \"theirs\" of user ") {
			t.Errorf("%s: %v", a.action, err)
		}
	}
	if got := state(); got != "RUNNING None" {
		t.Errorf("the other job after Gantry's refused actions: %q, want it running and not held", got)
	}
	// Had Gantry's USR1 reached the other job's script, its trap would run before that
	// of the USR2 sent after it (bash runs pending traps lowest signal first).
	slurmCmd("scancel", "--batch", "--signal=USR2", id)
	deadline = time.Now().Add(90 * time.Second)
	for {
		got, _ := os.ReadFile(signals)
		if strings.Contains(string(got), "USR2") {
			if string(got) != "USR2\n" {
				t.Errorf("signals the other job's script took: %q, want only the test's USR2", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other job's script did not take USR2: %q", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRealHoldReleaseCancel(t *testing.T) {
	t.Parallel()
	b, _ := realSlurm(t)
	w := follow(t, b)
	ctx := context.Background()
	blockerJob := nextJobID()
	blocker := w.submit(t, b, JobSpec{JobID: blockerJob, Attempt: 1, GPUs: 2, GPUModel: "A100-80GB", Command: []string{"sleep", "300"}})
	w.untilStarted(t, blocker)
	waitingJob := nextJobID()
	waiting := w.submit(t, b, JobSpec{JobID: waitingJob, Attempt: 1, GPUs: 2, GPUModel: "A100-80GB", Command: []string{"true"}})
	w.expect(t, waiting, EventPending)
	if err := b.Hold(ctx, waiting, waitingJob, 1); err != nil {
		t.Fatal(err)
	}
	// Skip the scheduler's reasons that may come first (Resources, Priority).
	e := w.next(t, waiting)
	for e.Kind == EventPending {
		e = w.next(t, waiting)
	}
	if e.Kind != EventHeld || e.Reason != "JobHeldAdmin" { // the tests run as root, a Slurm admin
		t.Errorf("held: %+v", e)
	}
	if err := b.Release(ctx, waiting, waitingJob, 1, 2); err != nil {
		t.Fatal(err)
	}
	w.expect(t, waiting, EventPending)
	if err := b.Cancel(ctx, waiting, waitingJob, 1); err != nil {
		t.Fatal(err)
	}
	if e := w.expect(t, waiting, EventRunEnded); !e.Final || e.Record.State != "CANCELLED" || !e.Record.Start.IsZero() && e.Record.Elapsed != 0 {
		t.Errorf("cancelled while pending: %+v %+v", e, e.Record)
	}
	if err := b.Cancel(ctx, blocker, blockerJob, 1); err != nil {
		t.Fatal(err)
	}
	if e := w.expect(t, blocker, EventRunEnded); !e.Final || e.Record.State != "CANCELLED" || e.Record.Elapsed <= 0 {
		t.Errorf("cancelled while running: %+v %+v", e, e.Record)
	}
	err := b.Hold(ctx, blocker, blockerJob, 1)
	var re *RejectedError
	if !errors.As(err, &re) {
		t.Errorf("holding a finished job: %v", err)
	}
	_, err = b.Submit(ctx, JobSpec{JobID: nextJobID(), Attempt: 1, Command: []string{"true"}, CPUMilli: 64000})
	if !errors.As(err, &re) || re.Reason != "More processors requested than permitted" {
		t.Errorf("a job over the node's size: %v", err)
	}
}

// A job that Slurm requeued once, held, and released as Gantry's attempt 4 runs as
// attempt 4 (not 4 plus the requeue before the release), and the next requeue as 5.
func TestRealReleaseRunsTheAttemptGantryNames(t *testing.T) {
	t.Parallel()
	b, conf := realSlurm(t)
	w := follow(t, b)
	job := nextJobID()
	id := w.submit(t, b, JobSpec{JobID: job, Attempt: 1, Command: []string{"bash", "-c", `echo "attempt $GANTRY_ATTEMPT"; sleep 300`}})
	stdout, _ := b.Config().LogPaths(job, 1)
	scontrol := func(args ...string) {
		t.Helper()
		cmd := exec.Command("scontrol", args...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scontrol %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	untilOutput := func(want string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !strings.HasSuffix(readLog(t, stdout), want) {
			if time.Now().After(deadline) {
				t.Fatalf("stdout %q, want it to end with %q", readLog(t, stdout), want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	w.untilStarted(t, id)
	untilOutput("attempt 1\n")
	scontrol("requeuehold", id) // Slurm's restart count is 1 from now
	for e := w.next(t, id); e.Kind != EventHeld; e = w.next(t, id) {
	}
	if err := b.Release(context.Background(), id, job, 1, 4); err != nil {
		t.Fatal(err)
	}
	w.untilStarted(t, id)
	untilOutput("attempt 1\nattempt 4\n")
	scontrol("requeue", id)
	untilOutput("attempt 1\nattempt 4\nattempt 5\n")
}

// A production job preempts a test-class job: the victim gets USR1, saves a
// checkpoint and exits; Slurm requeues it at the end of the grace time; its next run
// resumes from the checkpoint.
func TestRealPreemptionCheckpointsAndRequeues(t *testing.T) {
	t.Parallel()
	b, _ := realSlurm(t)
	w := follow(t, b)
	victimJob := nextJobID()
	script := `state="$GANTRY_CHECKPOINT_DIR/state"
if [ -f "$state" ]; then echo "resumed from $(cat "$state") on run $((SLURM_RESTART_COUNT + 1))"; exit 0; fi
step=0
trap 'echo "step-$step" > "$state"; echo "checkpointed at step $step"; exit 0' USR1
touch "$GANTRY_CHECKPOINT_DIR/running"
while :; do step=$((step + 1)); sleep 0.2; done`
	victim := w.submit(t, b, JobSpec{JobID: victimJob, Attempt: 1, PriorityClass: "test", GPUs: 2, GPUModel: "A100-80GB",
		CheckpointGrace: 30 * time.Second, Command: []string{"bash", "-c", script}})
	w.untilStarted(t, victim)
	ckpt := b.Config().CheckpointPath(victimJob)
	// Slurm counts a job running from its allocation; its script may start seconds
	// later on a busy machine, and only a started script can take the signal.
	waitFile(t, filepath.Join(ckpt, "running"))
	time.Sleep(time.Second) // a few steps
	urgent := w.submit(t, b, JobSpec{JobID: nextJobID(), Attempt: 1, PriorityClass: "production", GPUs: 2, GPUModel: "A100-80GB",
		Command: []string{"sleep", "1"}})

	e := w.expect(t, victim, EventRunEnded)
	if e.Final || e.Record.State != "PREEMPTED" || e.Run != 1 || !strings.HasSuffix(e.Message, "Slurm requeued it") {
		t.Fatalf("victim's first run: %+v", e)
	}
	if _, err := os.Stat(filepath.Join(ckpt, "checkpoint-request")); err != nil {
		t.Errorf("the wrapper should have written a checkpoint request: %v", err)
	}
	state, err := os.ReadFile(filepath.Join(ckpt, "state"))
	if err != nil || !strings.HasPrefix(string(state), "step-") {
		t.Fatalf("the victim's checkpoint: %q %v", state, err)
	}
	w.untilStarted(t, urgent)
	if e := w.expect(t, urgent, EventRunEnded); !e.Final || e.Record.State != "COMPLETED" || e.Record.QOS != "production" {
		t.Errorf("preemptor: %+v %+v", e, e.Record)
	}
	if e := w.expect(t, victim, EventPending); e.Run != 2 || !strings.Contains(e.Message, "was requeued and waits") {
		t.Errorf("victim back in Slurm's queue: %+v", e)
	}
	if e := w.untilStarted(t, victim); e.Run != 2 {
		t.Errorf("victim's second run: %+v", e)
	}
	if e := w.expect(t, victim, EventRunEnded); !e.Final || e.Record.State != "COMPLETED" || e.Run != 2 {
		t.Errorf("victim's end: %+v %+v", e, e.Record)
	}
	stdout, stderr := b.Config().LogPaths(victimJob, 1)
	if got := readLog(t, stderr); !strings.Contains(got, "waiting for Slurm to requeue the job") {
		t.Errorf("victim's stderr: %q", got)
	}
	log := readLog(t, stdout)
	if !strings.Contains(log, "checkpointed at step") || !strings.Contains(log, "resumed from "+strings.TrimSpace(string(state))+" on run 2") {
		t.Errorf("victim's log across both runs: %q", log)
	}
	runs, _, err := b.Runs(context.Background(), []string{victim})
	if err != nil || len(runs[victim]) != 2 || runs[victim][0].Alloc.GPUsByType["a100"] != 2 || runs[victim][0].Elapsed <= 0 {
		t.Errorf("both runs are accounted, so the preempted one is charged too: %+v %v", runs[victim], err)
	}
}

// slurmctld stops: polls fail with a clear reason, submissions fail as transient, the
// running job keeps running on its node and is not lost; when slurmctld returns the
// follower recovers and reports its end.
func TestRealSlurmDownAndBack(t *testing.T) {
	t.Parallel()
	b, conf := realSlurm(t)
	w := follow(t, b)
	ctx := context.Background()
	job := w.submit(t, b, JobSpec{JobID: nextJobID(), Attempt: 1, Command: []string{"sleep", "6"}})
	w.untilStarted(t, job)

	pidFile := filepath.Join(filepath.Dir(conf), "run", "slurmctld.pid")
	stopSlurmctld(t, pidFile)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			startSlurmctld(t, conf)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for w.f.Health().Reachable {
		if time.Now().After(deadline) {
			t.Fatal("the follower never noticed slurmctld was down")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if h := w.f.Health(); !strings.Contains(h.Reason, "Unable to contact slurm controller") {
		t.Errorf("health while down: %+v", h)
	}
	if err := b.Ping(ctx); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "DOWN") {
		t.Errorf("ping while down: %v", err)
	}
	late := JobSpec{JobID: nextJobID(), Attempt: 1, Command: []string{"true"}}
	if _, err := b.Submit(ctx, late); !Transient(err) {
		t.Errorf("submitting while down should fail as transient: %v", err)
	}
	time.Sleep(6 * time.Second) // the job ends on its node meanwhile

	startSlurmctld(t, conf)
	restarted = true
	if e := w.expect(t, job, EventRunEnded); !e.Final || e.Record.State != "COMPLETED" || e.Record.ExitCode != 0 {
		t.Errorf("the job's end, reported after recovery: %+v %+v", e, e.Record)
	}
	if h := w.f.Health(); !h.Reachable {
		t.Errorf("health after recovery: %+v", h)
	}
	id := w.submit(t, b, late) // the retry of the submission that failed
	if e := w.untilStarted(t, id); e.Run != 1 {
		t.Errorf("the retried submission: %+v", e)
	}
}

func stopSlurmctld(t *testing.T, pidFile string) {
	t.Helper()
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.Signal(syscall.Signal(0)) == nil {
		if time.Now().After(deadline) {
			t.Fatal("slurmctld did not stop")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func startSlurmctld(t *testing.T, conf string) {
	t.Helper()
	cmd := exec.Command("slurmctld", "-f", conf)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart slurmctld: %v: %s", err, out)
	}
	b, err := New(Config{Partition: "gpu", LogDir: "/", CheckpointDir: "/"}, NewExecRunner("", conf, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for b.Ping(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("slurmctld did not come back")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
