package slurm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// EventKind says what happened to a Slurm job.
type EventKind string

// Event kinds, in the order they can happen to one run.
const (
	// EventPending: the job waits in Slurm's queue; Reason says why (Resources,
	// Priority, BeginTime after a requeue, a limit, ...). Sent when the reason changes.
	EventPending EventKind = "pending"
	// EventHeld: the job is held (scontrol hold, by Gantry or an admin).
	EventHeld EventKind = "held"
	// EventStarted: a run started, on NodeList.
	EventStarted EventKind = "started"
	// EventRunEnded: a run ended; Record is its accounting. Final says the job will not
	// run again; otherwise Slurm requeued it (preemption, node failure).
	EventRunEnded EventKind = "run-ended"
	// EventVanished: Slurm no longer knows the job, in squeue or sacct. Final.
	EventVanished EventKind = "vanished"
	// EventUnreadable: what Slurm printed about the job could not be read; Reason
	// says what. The job keeps its last known state and is read again next poll.
	EventUnreadable EventKind = "unreadable"
)

// Seen is what the follower last saw of a job. Callers keep it with the job (it comes
// with every event) and hand it back to Track after a restart, so that nothing is
// reported twice or missed.
type Seen struct {
	State   string    `json:"state,omitempty"`  // Slurm's state
	Reason  string    `json:"reason,omitempty"` // Slurm's reason, or the parse error
	Start   time.Time `json:"start,omitzero"`   // start of the run seen running
	Runs    int       `json:"runs,omitempty"`   // ended runs reported
	Missing time.Time `json:"missing,omitzero"` // first poll that found the job nowhere
	// Nameless is the first poll that found the job out of squeue with a nameless
	// placeholder among its accounting records (see endedRuns). Kept by the follower
	// without an event, so a new leader waits afresh.
	Nameless time.Time `json:"nameless,omitzero"`
}

// Tracked is a job Gantry submitted and follows.
type Tracked struct {
	SlurmID string
	JobID   int64
	Attempt int
	// Submitted is the attempt the Slurm job was submitted as, which its Slurm job
	// name says (Config.SlurmName): what Slurm reports under SlurmID with another name
	// is another job, as when Slurm's job ids restart.
	Submitted int
	Seen      Seen
}

// Event is one thing that happened to a tracked job.
type Event struct {
	Kind     EventKind
	SlurmID  string
	JobID    int64
	Attempt  int
	State    string // Slurm's state
	Reason   string
	Run      int    // 1-based: which run of the Slurm job
	NodeList string // started
	Over     bool   // started: the run had ended already when the follower first saw it
	Record   *Run   // run-ended
	Final    bool   // run-ended, vanished: the Slurm job is over
	Message  string // for people: names the Slurm job id and the reason
	Seen     Seen   // the follower's view after this event
}

// Health is whether Slurm answered the last poll.
type Health struct {
	Reachable bool
	Reason    string    // why not, in Slurm's words
	Since     time.Time // when it became so
	Failures  int       // polls failed in a row
}

// FollowConfig tunes the follower.
type FollowConfig struct {
	// Interval between polls while Slurm answers.
	Interval time.Duration
	// MaxBackoff caps the wait between polls while it does not (doubling from Interval).
	MaxBackoff time.Duration
	// LostAfter is how long a job may be missing from both squeue and sacct, or be
	// accounted out of squeue by nothing but slurmdbd's nameless placeholders, before
	// it is reported vanished (accounting can lag a little behind the controller).
	LostAfter time.Duration
}

// DefaultFollowConfig is what the server uses unless told otherwise.
func DefaultFollowConfig() FollowConfig {
	return FollowConfig{Interval: 2 * time.Second, MaxBackoff: time.Minute, LostAfter: 10 * time.Minute}
}

// Follower polls a partition's jobs and reports what happens to the tracked ones.
// It is safe for concurrent use.
type Follower struct {
	b   *Backend
	cfg FollowConfig
	now func() time.Time

	mu      sync.Mutex
	tracked map[string]*Tracked
	// done holds Gantry's jobs no longer followed while squeue still lists them, by
	// Slurm id to Slurm job name, so that they are not taken for jobs submitted
	// outside Gantry.
	done    map[string]string
	health  Health
	foreign []Job
}

// NewFollower follows jobs of b's partition.
func NewFollower(b *Backend, cfg FollowConfig, now func() time.Time) *Follower {
	return &Follower{b: b, cfg: cfg, now: now, tracked: map[string]*Tracked{}, done: map[string]string{},
		health: Health{Reachable: true, Since: now().UTC()}}
}

// Track starts following a job (again, after a restart, with what was last seen).
func (f *Follower) Track(t Tracked) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tracked[t.SlurmID] = &t
}

// Untrack stops following a job.
func (f *Follower) Untrack(slurmID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tracked[slurmID]; ok {
		f.done[slurmID] = f.nameOf(*t)
	}
	delete(f.tracked, slurmID)
}

// nameOf is the Slurm job name a tracked job was submitted under.
func (f *Follower) nameOf(t Tracked) string { return f.b.cfg.SlurmName(t.JobID, t.Submitted) }

// Health says whether Slurm answered the last poll.
func (f *Follower) Health() Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

// Foreign lists the partition's jobs that Gantry did not submit, as of the last
// poll: shown read-only, and counted in utilisation.
func (f *Follower) Foreign() []Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Job(nil), f.foreign...)
}

// Run polls until ctx ends, every Interval while Slurm answers and backing off while it
// does not, handing events to handle.
func (f *Follower) Run(ctx context.Context, handle func(context.Context, Event) error) {
	for {
		failures := 0
		if err := f.Poll(ctx, handle); err != nil {
			failures = f.Health().Failures
		}
		t := time.NewTimer(Backoff(f.cfg.Interval, f.cfg.MaxBackoff, failures))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Backoff is the wait before the next poll after failures failed polls in a row:
// interval, doubling with each failure up to max.
func Backoff(interval, max time.Duration, failures int) time.Duration {
	d := interval
	for i := 0; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Poll reads the partition's jobs once and hands each tracked job's events to handle,
// in order. When handle fails for a job, the job keeps its previous view and its
// events come again on the next poll. Poll fails only when squeue cannot be read:
// Health then says why, and every job keeps its last known state.
func (f *Follower) Poll(ctx context.Context, handle func(context.Context, Event) error) error {
	now := f.now().UTC()
	// Jobs tracked from here on are judged next poll: this squeue may predate them.
	f.mu.Lock()
	tracked := make([]Tracked, 0, len(f.tracked))
	for _, t := range f.tracked {
		tracked = append(tracked, *t)
	}
	f.mu.Unlock()
	jobs, bad, err := f.b.Jobs(ctx)
	if err != nil {
		f.setHealth(now, err)
		return err
	}
	f.mu.Lock()
	var foreign []Job
	inQueue := map[string]Job{}
	for _, j := range jobs {
		inQueue[j.ID] = j
		t, tracked := f.tracked[j.ID]
		done, ok := f.done[j.ID]
		if !(tracked && f.nameOf(*t) == j.Name) && !(ok && done == j.Name) {
			foreign = append(foreign, j)
		}
	}
	for id, name := range f.done {
		if j, ok := inQueue[id]; !ok || j.Name != name {
			delete(f.done, id)
		}
	}
	f.foreign = foreign
	f.mu.Unlock()
	sort.Slice(tracked, func(a, b int) bool { return tracked[a].SlurmID < tracked[b].SlurmID })

	unreadable := map[string]*ParseError{}
	for _, pe := range bad {
		if pe.JobID != "" {
			unreadable[pe.JobID] = pe
		}
	}
	var needRuns []string
	for _, t := range tracked {
		if _, ok := unreadable[t.SlurmID]; ok {
			continue
		}
		if j, ok := inQueue[t.SlurmID]; !ok || j.Name != f.nameOf(t) || needsAccounting(t.Seen, j) {
			needRuns = append(needRuns, t.SlurmID)
		}
	}
	runs, badRuns, runsErr := f.b.Runs(ctx, needRuns)
	for _, pe := range badRuns {
		if pe.JobID != "" {
			unreadable[pe.JobID] = pe
		}
	}
	f.setHealth(now, runsErr)

	for _, t := range tracked {
		var evs []Event
		seen := t.Seen
		if pe, ok := unreadable[t.SlurmID]; ok {
			evs = unreadableEvents(t, pe)
			if len(evs) > 0 {
				seen = evs[len(evs)-1].Seen
			}
		} else if runsErr == nil || !contains(needRuns, t.SlurmID) {
			name := f.nameOf(t)
			j, queued := inQueue[t.SlurmID]
			var other *Job
			if queued && j.Name != name {
				stranger := j
				other, j, queued = &stranger, Job{}, false
			}
			rs := ownRuns(runs[t.SlurmID], name, other == nil)
			evs, seen = f.advance(t, j, queued, other, rs, len(rs) > 0, now)
		} // else accounting is unreachable: the job keeps its state until it answers
		f.deliver(ctx, t, evs, seen, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// deliver hands a job's events to handle, in order, and keeps the job's view: after
// once every event was handled (it holds what changed without an event too), else as
// of the last one handled. A job whose final event was handled is no longer followed.
func (f *Follower) deliver(ctx context.Context, t Tracked, evs []Event, after Seen, handle func(context.Context, Event) error) {
	seen := t.Seen
	final := false
	handled := 0
	for _, e := range evs {
		if err := handle(ctx, e); err != nil {
			break
		}
		seen, final = e.Seen, final || e.Final
		handled++
	}
	if handled == len(evs) {
		seen = after
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.tracked[t.SlurmID]
	switch {
	case !ok:
	case final:
		delete(f.tracked, t.SlurmID)
		f.done[t.SlurmID] = f.nameOf(t)
	default:
		cur.Seen = seen
	}
}

func (f *Follower) setHealth(now time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		if !f.health.Reachable {
			f.health = Health{Reachable: true, Since: now}
		}
		return
	}
	if f.health.Reachable {
		f.health = Health{Since: now}
	}
	f.health.Reason = err.Error()
	f.health.Failures++
}

// needsAccounting says whether a job's runs must be read from sacct: it ended, or the
// run seen running has ended since (the job was requeued, perhaps already restarted).
func needsAccounting(seen Seen, j Job) bool {
	phase, _ := phaseOf(j.State)
	return phase == phaseDone || runEndedSince(seen, j, phase)
}

func runEndedSince(seen Seen, j Job, phase int) bool {
	return !seen.Start.IsZero() && (phase != phaseRunning || !j.Start.Equal(seen.Start))
}

// ownRuns are the runs of a tracked job among sacct's records of its id, by name:
// slurmdbd keeps the jobs an id was given before Slurm's ids restarted. A placeholder
// (see endedRuns) has no name yet: it stays, to be waited for, when placeholders says
// it may be the job's. It is not when squeue lists another job under the id: slurmdbd
// makes placeholders for the job slurmctld runs now, and that is the other one.
func ownRuns(rs []Run, name string, placeholders bool) []Run {
	var own []Run
	for _, r := range rs {
		if r.Name == name || placeholders && placeholder(r) {
			own = append(own, r)
		}
	}
	return own
}

// advance compares a tracked job with what Slurm says now and returns the events
// between. queued says squeue listed j; other is the job squeue lists under the
// tracked job's id when that is another job; accounted says sacct answered with rs.
func (f *Follower) advance(t Tracked, j Job, queued bool, other *Job, rs []Run, accounted bool, now time.Time) ([]Event, Seen) {
	seen := t.Seen
	var evs []Event
	emit := func(e Event) {
		e.SlurmID, e.JobID, e.Attempt = t.SlurmID, t.JobID, t.Attempt
		if e.Run == 0 {
			e.Run = seen.Runs + 1
		}
		e.Seen = seen
		evs = append(evs, e)
	}
	if !queued && len(rs) == 0 && other != nil {
		// The controller holds another job under this id: Gantry's is not there, and
		// its accounting, which sacct did not have, is not coming.
		seen.State, seen.Reason, seen.Missing = "", reasonReused, time.Time{}
		emit(Event{Kind: EventVanished, Final: true, Reason: seen.Reason,
			Message: fmt.Sprintf("Slurm job %s is no longer %s, which Gantry submitted: Slurm gives that id to another job, %q of user %s (Slurm's job ids restarted, or someone renamed the job) and has no record of Gantry's",
				t.SlurmID, f.nameOf(t), printable(other.Name), orNobody(other.User))})
		return evs, seen
	}
	if !queued && len(rs) == 0 {
		if seen.Missing.IsZero() {
			seen.Missing = now
		}
		if now.Sub(seen.Missing) < f.cfg.LostAfter {
			if seen.Reason == reasonMissing {
				return nil, seen
			}
			seen.Reason = reasonMissing
			emit(Event{Kind: EventUnreadable, State: seen.State, Reason: reasonMissing,
				Message: fmt.Sprintf("Slurm job %s is not in squeue or sacct; waiting for Slurm's accounting", t.SlurmID)})
			return evs, seen
		}
		seen.State, seen.Reason = "", "unknown to Slurm"
		emit(Event{Kind: EventVanished, Final: true, Reason: seen.Reason,
			Message: fmt.Sprintf("Slurm job %s is unknown to Slurm: in neither squeue nor sacct for %s", t.SlurmID, f.cfg.LostAfter)})
		return evs, seen
	}
	seen.Missing = time.Time{}
	if queued || !slices.ContainsFunc(rs, placeholder) {
		seen.Nameless = time.Time{}
	} else {
		if seen.Nameless.IsZero() {
			seen.Nameless = now
		}
		if now.Sub(seen.Nameless) >= f.cfg.LostAfter {
			// slurmdbd did not fill the placeholder in: it is not coming. What is known
			// is what the named records say, if any.
			last := rs[len(rs)-1]
			if rs = slices.DeleteFunc(rs, placeholder); len(rs) == 0 {
				seen.State, seen.Reason, seen.Nameless = "", reasonNameless, time.Time{}
				emit(Event{Kind: EventVanished, Final: true, Reason: seen.Reason,
					Message: fmt.Sprintf("Slurm job %s left squeue, and slurmdbd has only a nameless placeholder record of it (state %s), unfilled for %s: Gantry cannot tell whether that run was its own, nor how it went",
						t.SlurmID, orNone(last.State), f.cfg.LostAfter)})
				return evs, seen
			}
		}
	}
	if !queued && placeholder(rs[len(rs)-1]) {
		// The job left squeue and its last record is a placeholder: whose run it is, and
		// how it went, show once slurmdbd fills in its name (or LostAfter passes).
		return nil, seen
	}

	// The current state: squeue's, or for a job that left squeue, its last run's.
	state, reason := j.State, j.Reason
	if !queued {
		state, reason = rs[len(rs)-1].State, ""
	}
	phase, _ := phaseOf(state)

	// Runs that ended since the last poll, from sacct.
	ended := endedRuns(rs, phase)
	if accounted && len(ended) <= seen.Runs && (phase == phaseDone || queued && runEndedSince(seen, j, phase)) {
		return nil, seen // a run ended but sacct has not caught up: wait for it
	}
	for i := seen.Runs; i < len(ended); i++ {
		r := ended[i]
		// A requeued run is never the last: the final run's record is still to come.
		final := i == len(ended)-1 && phase == phaseDone && r.State != "REQUEUED"
		if r.Ran() && seen.Start.IsZero() {
			// A run shorter than a poll was never seen running: its start still belongs
			// in the job's history, before its end.
			emit(Event{Kind: EventStarted, Run: i + 1, State: "RUNNING", NodeList: r.NodeList, Over: true,
				Message: fmt.Sprintf("Slurm job %s run %d started on %s (seen after it ended)", t.SlurmID, i+1, r.NodeList)})
		}
		seen.Runs, seen.State, seen.Reason, seen.Start = i+1, r.State, "", time.Time{}
		emit(Event{Kind: EventRunEnded, Run: i + 1, State: r.State, Record: &ended[i], Final: final, Message: endedMessage(t.SlurmID, i+1, r, final)})
	}
	if phase == phaseDone {
		return evs, seen
	}

	switch {
	case phase == phaseRunning && state != "COMPLETING" && !j.Start.Equal(seen.Start):
		// A COMPLETING job is ending, whatever start time squeue gives it: Slurm
		// moves the start of a job being requeued to the requeue time.
		seen.State, seen.Reason, seen.Start = state, "", j.Start
		emit(Event{Kind: EventStarted, State: state, NodeList: j.NodeList,
			Message: fmt.Sprintf("Slurm job %s run %d started on %s", t.SlurmID, seen.Runs+1, orNone(j.NodeList))})
	case phase == phasePending && (state != seen.State || reason != seen.Reason):
		seen.State, seen.Reason = state, reason
		kind := EventPending
		if heldReason(reason) {
			kind = EventHeld
		}
		emit(Event{Kind: kind, State: state, Reason: reason, Message: pendingMessage(t.SlurmID, seen.Runs, reason)})
	}
	return evs, seen
}

// endedRuns are the runs of a job that are over: all but a pending or running last one.
func endedRuns(rs []Run, phase int) []Run {
	n := len(rs)
	if n > 0 && phase != phaseDone && !runOver(rs[n-1]) {
		n--
	}
	out := rs[:n]
	for i := range out {
		if !runOver(out[i]) || placeholder(out[i]) {
			// sacct lags behind: take what is settled. A run without a partition is the
			// placeholder slurmdbd makes (named "allocation") when a step's record
			// arrives before the job's own: its name, partition and QOS are still missing.
			return out[:i]
		}
	}
	return out
}

// placeholder says whether a record is slurmdbd's nameless placeholder (see endedRuns).
func placeholder(r Run) bool { return r.Partition == "" }

// runOver says whether a run's record is settled: it ended, or an admin requeued it
// (scontrol requeue, requeuehold), which sacct keeps as REQUEUED on the run, making
// the next run's record only once that one starts or ends.
func runOver(r Run) bool {
	p, _ := phaseOf(r.State)
	return p == phaseDone || r.State == "REQUEUED"
}

func unreadableEvents(t Tracked, pe *ParseError) []Event {
	reason := pe.Error()
	if t.Seen.Reason == reason {
		return nil
	}
	seen := t.Seen
	seen.Reason = reason
	return []Event{{Kind: EventUnreadable, SlurmID: t.SlurmID, JobID: t.JobID, Attempt: t.Attempt, Run: seen.Runs + 1, State: seen.State,
		Reason: reason, Message: fmt.Sprintf("Slurm job %s: %s; keeping its last known state and reading it again", t.SlurmID, reason), Seen: seen}}
}

// reasonRequeueHeld is squeue's reason for a job an admin requeued held (scontrol
// requeuehold).
const reasonRequeueHeld = "job requeued in held state"

// reasonMissing is the Seen.Reason of a job found nowhere, until LostAfter.
const reasonMissing = "not in squeue or sacct"

// reasonNameless is the Seen.Reason of a job whose only record stayed a placeholder.
const reasonNameless = "its accounting never named it"

// reasonReused is the Seen.Reason of a job whose Slurm id Slurm gave to another job.
const reasonReused = "its Slurm job id is another job's"

func heldReason(reason string) bool {
	return reason == "JobHeldUser" || reason == "JobHeldAdmin" || reason == reasonRequeueHeld
}

func endedMessage(id string, run int, r Run, final bool) string {
	msg := fmt.Sprintf("Slurm job %s run %d ended %s after %s", id, run, r.State, r.Elapsed)
	switch {
	case r.State == "COMPLETED" || r.State == "FAILED":
		msg += fmt.Sprintf(" with exit code %d", r.ExitCode)
	case r.State == "TIMEOUT":
		msg += ": time limit reached"
	case r.State == "OUT_OF_MEMORY":
		msg += ": over its memory limit"
	case r.State == "NODE_FAIL":
		msg += ": its node " + orNone(r.NodeList) + " failed"
	}
	if r.Signal != 0 {
		msg += fmt.Sprintf(" (signal %d)", r.Signal)
	}
	if !final {
		msg += "; Slurm requeued it"
	}
	return msg
}

func pendingMessage(id string, endedRuns int, reason string) string {
	what := "waits"
	switch {
	case heldReason(reason):
		what = "is held in Slurm's queue"
	case endedRuns > 0:
		what = "was requeued and waits"
	}
	return fmt.Sprintf("Slurm job %s %s: %s", id, what, describeReason(reason))
}

// describeReason puts Slurm's pending reasons in words, keeping the reason itself.
func describeReason(r string) string {
	switch {
	case r == "":
		return "not yet considered by the scheduler"
	case r == "Resources":
		return "Resources (no free node has what it asks for)"
	case r == "Priority":
		return "Priority (jobs of higher priority are ahead)"
	case r == "BeginTime":
		return "BeginTime (its earliest start is later; Slurm delays a requeued job a little)"
	case r == "JobHeldUser":
		return r + " (held by its user; it starts once released)"
	case r == reasonRequeueHeld:
		return r + " (requeued and held by a Slurm administrator; it starts once released)"
	case r == "JobHeldAdmin":
		return r + " (held by a Slurm administrator, or a Gantry running as one; it starts once released)"
	case r == "Dependency":
		return "Dependency (waits for another job)"
	case strings.HasPrefix(r, "QOS") || strings.HasPrefix(r, "Assoc"):
		return r + " (over a QOS or account limit)"
	case r == "PartitionTimeLimit" || r == "PartitionNodeLimit" || r == "PartitionDown" || r == "PartitionInactive":
		return r + " (the partition does not allow it now)"
	}
	return r
}

func orNobody(user string) string {
	if user == "" {
		return "unknown"
	}
	return user
}

func orNone(s string) string {
	if s == "" {
		return "no node"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
