package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// cluster is what the fake Slurm prints, changed by the test between polls.
type cluster struct {
	mu      sync.Mutex
	squeue  []string
	sqErr   error
	sacct   []string
	acctErr error
}

func (c *cluster) set(fn func(c *cluster)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c)
}

func (c *cluster) answer(name string, _ []string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch name {
	case "squeue":
		return []byte(strings.Join(c.squeue, "\n")), c.sqErr
	case "sacct":
		return []byte(strings.Join(c.sacct, "\n")), c.acctErr
	}
	return nil, fmt.Errorf("unexpected %s", name)
}

// sq is a squeue line in squeueFormat.
func sq(id, state, reason, start string) string {
	return strings.Join([]string{id, "gantry-1-1", state, reason, "gpu", "research", "root", "gantry", "2026-11-30T10:00:00",
		start, "N/A", "0:05", "UNLIMITED", "node1", "1", "1", "100M", "gres:gpu:a100:1", "gantry job 1 attempt 1"}, sep)
}

// acct is a sacct line in sacctFormat.
func acct(id, state, submit, start, end string, elapsed int) string {
	return strings.Join([]string{id, "gantry-1-1", state, "0:0", submit, start, end, fmt.Sprint(elapsed),
		"billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=100M,node=1", "gpu", "research", "node1", "root", "gantry"}, sep)
}

// named gives a squeue or sacct line another job name.
func named(name, line string) string {
	f := strings.Split(line, sep)
	f[1] = name
	return strings.Join(f, sep)
}

type recorder struct {
	mu     sync.Mutex
	events []Event
	fail   bool
}

func (r *recorder) handle(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("database unavailable")
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func kinds(evs []Event) string {
	var s []string
	for _, e := range evs {
		k := string(e.Kind)
		if e.Kind == EventRunEnded {
			k += fmt.Sprintf("(%d %s final=%v)", e.Run, e.State, e.Final)
		}
		if e.Kind == EventStarted || e.Kind == EventPending {
			k += fmt.Sprintf("(%d)", e.Run)
		}
		s = append(s, k)
	}
	return strings.Join(s, " ")
}

type followFixture struct {
	c     *cluster
	f     *Follower
	rec   *recorder
	clock time.Time
}

func newFollowFixture(t *testing.T) *followFixture {
	fx := &followFixture{c: &cluster{}, rec: &recorder{}, clock: utc("2026-11-30T10:00:00")}
	b, _ := newFakeBackend(t, fx.c.answer)
	fx.f = NewFollower(b, FollowConfig{Interval: time.Second, MaxBackoff: 16 * time.Second, LostAfter: time.Minute}, func() time.Time { return fx.clock })
	fx.f.Track(Tracked{SlurmID: "11", JobID: 1, Attempt: 1, Submitted: 1})
	return fx
}

// poll runs one poll and returns its events as kinds.
func (fx *followFixture) poll(t *testing.T) (string, []Event) {
	t.Helper()
	fx.clock = fx.clock.Add(2 * time.Second)
	err := fx.f.Poll(context.Background(), fx.rec.handle)
	if err != nil && fx.f.Health().Reachable {
		t.Fatalf("poll failed but health says reachable: %v", err)
	}
	evs := fx.rec.take()
	return kinds(evs), evs
}

func TestFollowLifecycle(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "PENDING", "Resources", "N/A"), sq("12", "RUNNING", "None", "2026-11-30T09:00:00")}
	})
	got, evs := fx.poll(t)
	if got != "pending(1)" || evs[0].Reason != "Resources" || evs[0].Message != "Slurm job 11 waits: Resources (no free node has what it asks for)" {
		t.Fatalf("got %s %+v", got, evs)
	}
	if f := fx.f.Foreign(); len(f) != 1 || f[0].ID != "12" {
		t.Errorf("job 12 was not submitted by Gantry: foreign %+v", f)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("nothing changed, got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	got, evs = fx.poll(t)
	if got != "started(1)" || evs[0].NodeList != "node1" || evs[0].Message != "Slurm job 11 run 1 started on node1" {
		t.Fatalf("got %s %+v", got, evs)
	}
	// Done in squeue, but sacct has not caught up: wait rather than guess the exit code.
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "COMPLETED", "None", "2026-11-30T10:00:05")}
		c.sacct = []string{acct("11", "RUNNING", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "Unknown", 3)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("accounting lags: got %s", got)
	}
	// slurmdbd's placeholder, made when the batch step's record came first: no name,
	// partition or QOS yet. It is not the run's accounting.
	fx.c.set(func(c *cluster) {
		placeholder := strings.Split(acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:09", 4), sep)
		placeholder[1], placeholder[9], placeholder[10] = "allocation", "", ""
		c.sacct = []string{strings.Join(placeholder, sep)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a placeholder accounting record: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = []string{acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:09", 4)}
	})
	got, evs = fx.poll(t)
	if got != "run-ended(1 COMPLETED final=true)" || evs[0].Record.Elapsed != 4*time.Second || evs[0].Record.Alloc.GPUsByType["a100"] != 1 ||
		evs[0].Message != "Slurm job 11 run 1 ended COMPLETED after 4s with exit code 0" {
		t.Fatalf("got %s %+v", got, evs)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("a final job is no longer followed, got %s", got)
	}
	if f := fx.f.Foreign(); len(f) != 0 {
		t.Errorf("Gantry's finished job is not foreign: %+v", f)
	}
}

func TestFollowPreemptionAndRequeue(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	// Preempted and requeued: pending again, sacct still shows the run as running.
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "PENDING", "BeginTime", "N/A")}
		c.sacct = []string{acct("11", "RUNNING", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "Unknown", 9)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a run ended but sacct lags: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = []string{
			acct("11", "PENDING", "2026-11-30T10:00:20", "Unknown", "Unknown", 0),
			acct("11", "PREEMPTED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:20", 15),
		}
	})
	got, evs := fx.poll(t)
	if got != "run-ended(1 PREEMPTED final=false) pending(2)" {
		t.Fatalf("got %s", got)
	}
	if evs[0].Message != "Slurm job 11 run 1 ended PREEMPTED after 15s; Slurm requeued it" || evs[0].Record.Elapsed != 15*time.Second {
		t.Errorf("run ended: %+v", evs[0])
	}
	if !strings.HasPrefix(evs[1].Message, "Slurm job 11 was requeued and waits: BeginTime") {
		t.Errorf("pending: %s", evs[1].Message)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:31")} })
	if got, _ := fx.poll(t); got != "started(2)" {
		t.Fatalf("got %s", got)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("nothing changed: got %s", got)
	}
	// Preempted and restarted between two polls: both runs are reported.
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:01:00")}
		c.sacct = []string{
			acct("11", "PREEMPTED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:20", 15),
			acct("11", "NODE_FAIL", "2026-11-30T10:00:20", "2026-11-30T10:00:31", "2026-11-30T10:00:50", 19),
			acct("11", "RUNNING", "2026-11-30T10:00:50", "2026-11-30T10:01:00", "Unknown", 1),
		}
	})
	got, evs = fx.poll(t)
	if got != "run-ended(2 NODE_FAIL final=false) started(3)" || !strings.Contains(evs[0].Message, "its node node1 failed") {
		t.Fatalf("got %s %+v", got, evs)
	}
}

// An admin's scontrol requeuehold, as recorded from Slurm 22.05: the run stays
// REQUEUED in sacct, with no record of the next run until it starts; the run is over,
// and the job is held. A job that ends before its last run's record comes waits for it.
func TestFollowAdminRequeue(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	requeued := acct("11", "REQUEUED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:09", 4)
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "PENDING", "job requeued in held state", "N/A")}
		c.sacct = []string{requeued}
	})
	got, evs := fx.poll(t)
	if got != "run-ended(1 REQUEUED final=false) held" || evs[1].Message != "Slurm job 11 is held in Slurm's queue: job requeued in held state "+
		"(requeued and held by a Slurm administrator; it starts once released)" {
		t.Fatalf("got %s %+v", got, evs)
	}
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:30")}
		c.sacct = []string{requeued, acct("11", "RUNNING", "2026-11-30T10:00:09", "2026-11-30T10:00:30", "Unknown", 1)}
	})
	if got, _ := fx.poll(t); got != "started(2)" {
		t.Fatalf("released: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "PENDING", "BeginTime", "N/A")}
		c.sacct = []string{requeued, acct("11", "REQUEUED", "2026-11-30T10:00:09", "2026-11-30T10:00:30", "2026-11-30T10:00:40", 10)}
	})
	if got, _ := fx.poll(t); got != "run-ended(2 REQUEUED final=false) pending(3)" {
		t.Fatalf("requeued again: got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "CANCELLED", "None", "N/A")} })
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("cancelled before the last run's record came: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = append(c.sacct, acct("11", "CANCELLED", "2026-11-30T10:00:40", "Unknown", "2026-11-30T10:00:50", 0))
	})
	if got, _ := fx.poll(t); got != "run-ended(3 CANCELLED final=true)" {
		t.Fatalf("cancelled: got %s", got)
	}
}

// Slurm down: polls fail with a clear reason and back off, tracked jobs keep their
// state and are not lost; when Slurm returns, what happened meanwhile is reported.
// As recorded from Slurm 22.05, a preempted job goes RUNNING, then COMPLETING with
// its start moved to the requeue time, then PENDING (BeginTime), then RUNNING again.
func TestFollowRequeueThroughCompleting(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T01:06:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "COMPLETING", "None", "2026-11-30T01:06:23")}
		c.sacct = []string{acct("11", "RUNNING", "2026-11-30T01:06:04", "2026-11-30T01:06:05", "Unknown", 18)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("completing, sacct not settled: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = []string{acct("11", "PREEMPTED", "2026-11-30T01:06:04", "2026-11-30T01:06:05", "2026-11-30T01:06:23", 18)}
	})
	if got, _ := fx.poll(t); got != "run-ended(1 PREEMPTED final=false)" {
		t.Fatalf("completing, sacct settled: got %s", got)
	}
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "PENDING", "BeginTime", "2026-11-30T01:06:35")}
		c.sacct = append(c.sacct, acct("11", "PENDING", "2026-11-30T01:06:23", "Unknown", "Unknown", 0))
	})
	if got, _ := fx.poll(t); got != "pending(2)" {
		t.Fatalf("requeued: got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T01:06:35")} })
	if got, _ := fx.poll(t); got != "started(2)" {
		t.Fatalf("second run: got %s", got)
	}
}

func TestFollowSlurmDownAndBack(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	down := sections(t, "ctld_down.txt")["squeue"]
	fx.c.set(func(c *cluster) { c.sqErr = failed("squeue", down) })
	var waits []time.Duration
	for i := 0; i < 6; i++ {
		if got, _ := fx.poll(t); got != "" {
			t.Fatalf("no events while Slurm is down, got %s", got)
		}
		h := fx.f.Health()
		if h.Reachable || h.Failures != i+1 || !strings.Contains(h.Reason, "Unable to contact slurm controller (connect failure)") {
			t.Fatalf("health %+v", h)
		}
		waits = append(waits, Backoff(time.Second, 16*time.Second, h.Failures))
	}
	if fmt.Sprint(waits) != "[2s 4s 8s 16s 16s 16s]" {
		t.Errorf("back-off %v", waits)
	}
	since := fx.f.Health().Since
	fx.c.set(func(c *cluster) {
		c.sqErr, c.squeue = nil, nil // it finished meanwhile and left squeue
		c.sacct = []string{acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:30", 25)}
	})
	got, _ := fx.poll(t)
	if h := fx.f.Health(); !h.Reachable || h.Failures != 0 || !h.Since.After(since) {
		t.Errorf("health after recovery %+v", h)
	}
	if got != "run-ended(1 COMPLETED final=true)" {
		t.Errorf("the job's end while Slurm was down: got %s", got)
	}
}

func TestFollowAccountingDown(t *testing.T) {
	fx := newFollowFixture(t)
	fx.f.Track(Tracked{SlurmID: "12", JobID: 2, Attempt: 1, Submitted: 1})
	fx.c.set(func(c *cluster) {
		c.squeue = []string{sq("11", "COMPLETED", "None", "2026-11-30T10:00:05"), named("gantry-2-1", sq("12", "PENDING", "Priority", "N/A"))}
		c.acctErr = failed("sacct", sections(t, "dbd_down.txt")["sacct (slurmdbd down)"])
	})
	got, evs := fx.poll(t)
	if got != "pending(1)" || evs[0].SlurmID != "12" {
		t.Fatalf("the job that needs no accounting still moves: got %s", got)
	}
	if h := fx.f.Health(); h.Reachable || !strings.Contains(h.Reason, "Problem talking to the database") {
		t.Errorf("health %+v", h)
	}
	fx.c.set(func(c *cluster) {
		c.acctErr = nil
		c.sacct = []string{acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:30", 25)}
	})
	// Job 11 ran between two polls: its start is reported, from the accounting, before its end.
	got, evs = fx.poll(t)
	if got != "started(1) run-ended(1 COMPLETED final=true)" || !evs[0].Over || evs[0].NodeList == "" {
		t.Errorf("after accounting returns: %s %+v", got, evs)
	}
}

func TestFollowVanishedJob(t *testing.T) {
	fx := newFollowFixture(t)
	got, evs := fx.poll(t)
	if got != "unreadable" || evs[0].Reason != "not in squeue or sacct" {
		t.Fatalf("got %s %+v", got, evs)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("said once, got %s", got)
	}
	fx.clock = fx.clock.Add(time.Minute)
	got, evs = fx.poll(t)
	if got != "vanished" || !evs[0].Final || evs[0].Message != "Slurm job 11 is unknown to Slurm: in neither squeue nor sacct for 1m0s" {
		t.Fatalf("got %s %+v", got, evs)
	}
}

// Slurm's job ids restarted: what it says of another job under a tracked job's id
// never becomes the tracked job's history.
func TestFollowJobIDOfAnotherJob(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	// The recorded squeue and sacct of a Slurm whose job 1 is "ok" of user root.
	fx.f.Track(Tracked{SlurmID: "1", JobID: 7, Attempt: 2, Submitted: 1})
	fx.c.set(func(c *cluster) {
		c.squeue = strings.Split(strings.TrimSpace(string(readFixture(t, "squeue_mixed.txt"))), "\n")
		c.sacct = strings.Split(strings.TrimSpace(string(readFixture(t, "sacct_mixed.txt"))), "\n")
	})
	_, evs := fx.poll(t)
	var one []Event
	for _, e := range evs {
		if e.SlurmID == "1" {
			one = append(one, e)
		}
	}
	want := `Slurm job 1 is no longer gantry-7-1, which Gantry submitted: Slurm gives that id to another job, "ok" of user root (Slurm's job ids restarted, or someone renamed the job) and has no record of Gantry's`
	if got := kinds(one); got != "vanished" || !one[0].Final || one[0].Record != nil || one[0].Attempt != 2 || one[0].Message != want {
		t.Fatalf("got %s %+v", got, one)
	}
	if foreign := foreignNames(fx.f); foreign["1"] != "ok" {
		t.Errorf("the other job 1 is not Gantry's: foreign %v", foreign)
	}
	if got, _ := fx.poll(t); strings.Contains(got, "vanished") {
		t.Errorf("said once, got %s", got)
	}
	if foreign := foreignNames(fx.f); foreign["1"] != "ok" {
		t.Errorf("still foreign once no longer followed: %v", foreign)
	}
}

// slurmdbd's placeholder record (no name, partition or QOS yet) under a tracked id
// says nothing of whose run it is: with another job in squeue under the id, it is that
// job's, and the tracked job is gone at once; with none, the follower waits for the
// record's name, and only then compares it.
func TestFollowPlaceholderUnderATrackedID(t *testing.T) {
	placeholder := func(state string) string {
		f := strings.Split(acct("11", state, "2026-11-30T10:00:00", "Unknown", "Unknown", 0), sep)
		f[1], f[9], f[10] = "allocation", "", ""
		return strings.Join(f, sep)
	}
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.squeue = []string{named("theirs", sq("11", "PENDING", "None", "N/A"))}
		c.sacct = []string{placeholder("PENDING")}
	})
	if got, evs := fx.poll(t); got != "vanished" || !strings.Contains(evs[0].Message, `Slurm gives that id to another job, "theirs" of user root`) {
		t.Fatalf("another job in squeue, a placeholder in sacct: got %s %+v", got, evs)
	}

	fx = newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.sacct = []string{placeholder("PENDING")} })
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("only a placeholder in sacct: got %s, want nothing until its name is there", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = []string{named("theirs", acct("11", "PENDING", "2026-11-30T10:00:00", "Unknown", "Unknown", 0))}
	})
	if got, evs := fx.poll(t); got != "unreadable" || evs[0].Reason != "not in squeue or sacct" {
		t.Fatalf("the placeholder filled in as another job's: got %s %+v", got, evs)
	}

	fx = newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.sacct = []string{placeholder("COMPLETED")} })
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("only a placeholder in sacct: got %s, want nothing until its name is there", got)
	}
	fx.c.set(func(c *cluster) {
		c.sacct = []string{acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:09", 4)}
	})
	if got, _ := fx.poll(t); got != "started(1) run-ended(1 COMPLETED final=true)" {
		t.Fatalf("the placeholder filled in as the tracked job's: got %s", got)
	}
}

// A placeholder that slurmdbd never fills in is waited for as long as a job found
// nowhere: then the job is lost, or, when named records of it remain, it ends as they
// say without the nameless run.
func TestFollowPlaceholderThatNeverFillsIn(t *testing.T) {
	placeholder := func(state, submit, start, end string, elapsed int) string {
		f := strings.Split(acct("11", state, submit, start, end, elapsed), sep)
		f[1], f[9], f[10] = "allocation", "", ""
		return strings.Join(f, sep)
	}
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.sacct = []string{placeholder("COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:09", 4)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a placeholder: got %s, want nothing while slurmdbd may fill it in", got)
	}
	fx.clock = fx.clock.Add(56 * time.Second)
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a placeholder for 58s of the 1m LostAfter: got %s", got)
	}
	got, evs := fx.poll(t)
	want := "Slurm job 11 left squeue, and slurmdbd has only a nameless placeholder record of it (state COMPLETED), unfilled for 1m0s: Gantry cannot tell whether that run was its own, nor how it went"
	if got != "vanished" || !evs[0].Final || evs[0].Reason != "its accounting never named it" || evs[0].Record != nil || evs[0].Message != want {
		t.Fatalf("a placeholder for the whole LostAfter: got %s %+v", got, evs)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("a vanished job is no longer followed: got %s", got)
	}

	// The wait starts again once the job is back in squeue.
	fx = newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.sacct = []string{placeholder("PENDING", "2026-11-30T10:00:00", "Unknown", "Unknown", 0)}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a placeholder: got %s", got)
	}
	fx.clock = fx.clock.Add(50 * time.Second)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "PENDING", "Priority", "N/A")} })
	if got, _ := fx.poll(t); got != "pending(1)" {
		t.Fatalf("back in squeue: got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = nil })
	fx.clock = fx.clock.Add(50 * time.Second)
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a placeholder again, 50s after the first wait ended: got %s, want a new wait", got)
	}

	// Preempted, requeued, and done: the preempted run's record stayed nameless. The
	// job ends as its final record says once the wait is over.
	fx = newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.sacct = []string{
			placeholder("PREEMPTED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:20", 15),
			acct("11", "FAILED", "2026-11-30T10:00:20", "2026-11-30T10:00:30", "2026-11-30T10:00:40", 10),
		}
	})
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("a nameless run before the last: got %s, want nothing while slurmdbd may fill it in", got)
	}
	fx.clock = fx.clock.Add(time.Minute)
	if got, evs := fx.poll(t); got != "started(1) run-ended(1 FAILED final=true)" || evs[1].Record.Elapsed != 10*time.Second {
		t.Fatalf("the nameless run left out: got %s %+v", got, evs)
	}
}

// A running job missing from squeue and sacct for a while, then back, is not lost at
// once the next time it goes missing: its wait starts again.
func TestFollowMissingAgainWaitsAgain(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Fatalf("got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = nil })
	if got, _ := fx.poll(t); got != "unreadable" {
		t.Fatalf("missing: got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("back, unchanged: got %s", got)
	}
	fx.clock = fx.clock.Add(time.Minute)
	fx.c.set(func(c *cluster) { c.squeue = nil })
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("missing again, a minute after it first was: got %s, want a new wait (its note still stands)", got)
	}
	fx.clock = fx.clock.Add(56 * time.Second)
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("missing again for 58s: got %s", got)
	}
	if got, _ := fx.poll(t); got != "vanished" {
		t.Errorf("missing again for the whole LostAfter: got %s", got)
	}
}

func foreignNames(f *Follower) map[string]string {
	names := map[string]string{}
	for _, j := range f.Foreign() {
		names[j.ID] = j.Name
	}
	return names
}

// slurmdbd keeps the job an id was given before Slurm's ids restarted: sacct lists
// both, and only the tracked job's own record is its run.
func TestFollowAccountingOfAnotherJobUnderItsID(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.sacct = []string{
			named("train", strings.Replace(acct("11", "FAILED", "2026-11-29T08:00:00", "2026-11-29T08:00:01", "2026-11-29T09:00:01", 3600), "0:0", "3:0", 1)),
			acct("11", "COMPLETED", "2026-11-30T10:00:00", "2026-11-30T10:00:05", "2026-11-30T10:00:30", 25),
		}
	})
	got, evs := fx.poll(t)
	if got != "started(1) run-ended(1 COMPLETED final=true)" || evs[1].Record.ExitCode != 0 || evs[1].Record.Elapsed != 25*time.Second {
		t.Fatalf("got %s %+v", got, evs)
	}

	fx = newFollowFixture(t)
	fx.c.set(func(c *cluster) {
		c.sacct = []string{named("train", acct("11", "COMPLETED", "2026-11-29T08:00:00", "2026-11-29T08:00:01", "2026-11-29T09:00:01", 3600))}
	})
	if got, evs := fx.poll(t); got != "unreadable" || evs[0].Reason != "not in squeue or sacct" {
		t.Errorf("only another job's record: got %s %+v", got, evs)
	}
}

func TestFollowRepeatsEventsTheHandlerDidNotTake(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	fx.rec.fail = true
	if got, _ := fx.poll(t); got != "" {
		t.Fatalf("got %s", got)
	}
	fx.rec.fail = false
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Errorf("the event the handler refused comes again: got %s", got)
	}
}

func TestFollowResumesFromSeenAfterRestart(t *testing.T) {
	fx := newFollowFixture(t)
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	_, evs := fx.poll(t)
	restarted := NewFollower(fx.f.b, fx.f.cfg, func() time.Time { return fx.clock })
	restarted.Track(Tracked{SlurmID: "11", JobID: 1, Attempt: 1, Submitted: 1, Seen: evs[len(evs)-1].Seen})
	fx.f = restarted
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("a restarted follower repeats nothing: got %s", got)
	}
}

func TestFollowUnreadableLine(t *testing.T) {
	fx := newFollowFixture(t)
	bad := strings.Replace(sq("11", "RUNNING", "None", "2026-11-30T10:00:05"), "2026-11-30T10:00:05", "soon", 1)
	fx.c.set(func(c *cluster) { c.squeue = []string{bad} })
	got, evs := fx.poll(t)
	if got != "unreadable" || evs[0].Reason != `cannot parse squeue output line 1 field start_time "soon": want a time like 2006-01-02T15:04:05` {
		t.Fatalf("got %s %+v", got, evs)
	}
	if got, _ := fx.poll(t); got != "" {
		t.Errorf("said once, got %s", got)
	}
	fx.c.set(func(c *cluster) { c.squeue = []string{sq("11", "RUNNING", "None", "2026-11-30T10:00:05")} })
	if got, _ := fx.poll(t); got != "started(1)" {
		t.Errorf("readable again: got %s", got)
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 3: 8 * time.Second, 10: time.Minute, 1000: time.Minute} {
		if got := Backoff(time.Second, time.Minute, failures); got != want {
			t.Errorf("%d failures: %s, want %s", failures, got, want)
		}
	}
}
