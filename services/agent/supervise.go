package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// superviseTick is how often an attempt's supervisor looks at its files.
const superviseTick = 200 * time.Millisecond

// attempt is one attempt the agent supervises.
type attempt struct {
	ref        agentapi.AttemptRef
	files      attemptFiles
	checkpoint string
	// cgroup is the cgroup v2 the job runs in; empty when it runs in none.
	cgroup string
	// ctr is the container the job runs in, and cli its runtime; nil for a process.
	ctr       *containerSpec
	cli       *containerCLI
	stops     chan agentapi.Stop
	staleOnce sync.Once
	staleCh   chan struct{}
	done      chan struct{} // closed when the supervisor returns
	finished  chan struct{} // closed when nothing more is owed to the server
	// reaped is closed when the shim this agent launched exited; nil for a shim
	// a previous agent launched.
	reaped <-chan struct{}
}

func newAttempt(ref agentapi.AttemptRef, dir, checkpoint string) *attempt {
	return &attempt{
		ref: ref, files: attemptFiles{dir: dir}, checkpoint: checkpoint,
		stops: make(chan agentapi.Stop, 1), staleCh: make(chan struct{}),
		done: make(chan struct{}), finished: make(chan struct{}),
	}
}

// requestStop hands the newest stop request to the supervisor, replacing one it has
// not taken yet: a later one may say that the job saved its checkpoint.
func (at *attempt) requestStop(s agentapi.Stop) {
	for {
		select {
		case at.stops <- s:
			return
		default:
		}
		select {
		case <-at.stops:
		default:
		}
	}
}

// useContainer says that the attempt runs in the container c describes (nil: as a process).
func (at *attempt) useContainer(c *containerSpec) {
	if c != nil {
		at.ctr, at.cli = c, &containerCLI{runtime: c.Runtime, path: c.CLI}
	}
}

// errNotRunning is a signal to a container that does not run yet: try again once it does.
var errNotRunning = errors.New("the container does not run yet")

// signal sends sig to the job: to its process group, or through the runtime to its
// container's init. A container that does not run yet gets nothing (errNotRunning);
// a SIGTERM or SIGKILL meant for it stops its start instead where the start can
// still be stopped (its image is being pulled: a SIGTERM to the shim), and once the
// shim launched it the caller signals it when it runs.
func (at *attempt) signal(sig syscall.Signal) error {
	if at.cli == nil {
		return at.files.signal(sig)
	}
	if at.files.jobPID() <= 0 {
		if sig == syscall.SIGUSR1 {
			return errNotRunning
		}
		if !at.shimAlive() {
			return errors.New("its supervisor is not running")
		}
		if err := syscall.Kill(readPID(at.files.path(shimPIDFile)), syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop the start of the container: %w", err)
		}
		return errNotRunning
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	return at.cli.kill(ctx, at.ctr.Name, sig)
}

// markStale says the server no longer wants this attempt: it is killed at once.
func (at *attempt) markStale() { at.staleOnce.Do(func() { close(at.staleCh) }) }

func (at *attempt) isStale() bool {
	select {
	case <-at.staleCh:
		return true
	default:
		return false
	}
}

// shimAlive reports whether the attempt's supervisor runs. A shim this agent
// launched is its child, known alive until reaped: right after the launch its
// command line may not be readable yet.
func (at *attempt) shimAlive() bool {
	if at.reaped == nil {
		return at.files.shimAlive()
	}
	select {
	case <-at.reaped:
		return false
	default:
		return true
	}
}

func (at *attempt) isFinished() bool {
	select {
	case <-at.finished:
		return true
	default:
		return false
	}
}

// supervise follows an attempt until nothing more is owed to the server: it reports
// the start, ships output, runs the stop protocol, and reports the exit. When ctx
// ends (the agent stops) it returns and leaves the job running.
func (ag *Agent) supervise(ctx context.Context, at *attempt) {
	defer close(at.done)
	log := ag.log.With("job", at.ref.JobID, "attempt", at.ref.Attempt, "replica", at.ref.Replica)
	t := time.NewTicker(superviseTick)
	defer t.Stop()
	var stop stopProtocol
	retry := backoff{}
	killed := false
	for {
		st, err := ag.exitOf(at)
		if err != nil {
			log.Error("cannot read the exit status", "err", err)
		}
		if at.isStale() && !killed && st == nil {
			log.Warn("the server moved this attempt on: killing it")
			if at.signal(syscall.SIGKILL) == nil {
				killed = true
			}
		}
		if retry.ready() {
			err := ag.reportStart(ctx, at)
			if err == nil {
				_, err = ag.shipLogs(ctx, at.ref, at.files)
			}
			noteResult(at, &retry, err, log)
		}
		if st != nil {
			ag.finish(ctx, at, st, log)
			return
		}
		stop.advance(ag, at, log)
		select {
		case <-ctx.Done():
			return
		case s := <-at.stops:
			stop.begin(s, ag, at, log)
		case <-at.staleCh:
		case <-t.C:
		}
	}
}

// exitOf returns how the attempt ended, nil while it runs. A supervisor that
// vanished without an exit status (killed, or the machine rebooted) counts as
// an exit of -1, recorded so that it is reported once.
func (ag *Agent) exitOf(at *attempt) (*exitStatus, error) {
	st, err := at.files.exit()
	if st != nil || err != nil || at.shimAlive() {
		return st, err
	}
	if st, err = at.files.exit(); st != nil || err != nil {
		return st, err
	}
	st = &exitStatus{ExitCode: -1, Message: "its supervisor vanished (killed, or the node restarted)", EndedAt: time.Now().UTC()}
	if at.cli != nil {
		if st, err = at.containerAfterShim(); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return st, writeFileAtomic(at.files.path(exitFile), b, 0o644)
}

// containerAfterShim is how an attempt whose shim vanished ended, as its runtime
// says: the exit code of a container that ended, or none for one that still ran,
// which is stopped (nothing would follow its output or its lease any more). The
// container is removed.
func (at *attempt) containerAfterShim() (*exitStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*cliTimeout)
	defer cancel()
	st, err := at.cli.state(ctx, at.ctr.Name)
	if err != nil {
		return nil, fmt.Errorf("ask the runtime how the container of an attempt whose supervisor vanished is: %w", err)
	}
	out := exitStatus{ExitCode: -1, Message: "its supervisor vanished (killed, or the node restarted) before its container ran", EndedAt: time.Now().UTC()}
	switch {
	case st == nil:
	case st.Running:
		out.Message = "its supervisor vanished (killed, or the node restarted) while its container ran: the container was stopped"
	default:
		out = containerExit(st, at.ctr.MemoryMiB)
		out.Message = strings.TrimSuffix("its supervisor vanished after its container ended; "+out.Message, "; ")
	}
	if err := at.cli.remove(ctx, at.ctr.Name); err != nil {
		return nil, fmt.Errorf("remove the container of an attempt whose supervisor vanished: %w", err)
	}
	return &out, nil
}

// reportStart tells the server once that the attempt started: a process at once,
// a container once it runs (not while its image is being pulled) or has ended.
func (ag *Agent) reportStart(ctx context.Context, at *attempt) error {
	if at.files.has(startedFile) || at.isStale() {
		return nil
	}
	if at.ctr != nil && !at.files.has(pidFile) && !at.files.has(exitFile) {
		return nil
	}
	if err := ag.client.report(ctx, agentapi.Report{AttemptRef: at.ref, Event: agentapi.EventStarted}); err != nil {
		return err
	}
	if at.ctr != nil {
		// Its image is on the node now: the next heartbeat says so.
		ag.images.soon()
	}
	return at.files.mark(startedFile)
}

// noteResult reacts to the outcome of talking to the server about an attempt.
func noteResult(at *attempt, retry *backoff, err error, log *slog.Logger) {
	switch {
	case err == nil:
		retry.reset()
	case errors.Is(err, errStale):
		at.markStale()
		retry.reset()
	default:
		log.Warn("cannot reach the server about this attempt; retrying", "err", err, "in", retry.fail())
	}
}

// finish ships the rest of the output and reports the exit, retrying until the
// server has both (or the agent stops, in which case a restarted agent resumes).
func (ag *Agent) finish(ctx context.Context, at *attempt, st *exitStatus, log *slog.Logger) {
	retry := backoff{}
	for {
		done, err := ag.finishStep(ctx, at, st)
		if done {
			break
		}
		if err != nil {
			noteResult(at, &retry, err, log)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry.wait()):
		}
	}
	if err := at.files.mark(finishedFile); err != nil {
		log.Warn("cannot record that the attempt finished", "err", err)
	}
	log.Info("attempt ended", "exit_code", st.ExitCode, "signal", st.Signal, "stale", at.isStale())
	close(at.finished)
}

// finishStep does what is left of finishing: report the start, ship the output,
// report the exit. It reports whether nothing is left. The output of a stale
// attempt is still shipped (it is kept per attempt); only its exit is not reported.
func (ag *Agent) finishStep(ctx context.Context, at *attempt, st *exitStatus) (bool, error) {
	err := ag.reportStart(ctx, at)
	if err != nil && !errors.Is(err, errStale) {
		return false, err
	}
	caughtUp, err := ag.shipLogs(ctx, at.ref, at.files)
	switch {
	case errors.Is(err, errStale):
		at.markStale()
		return true, nil
	case err != nil:
		return false, err
	case !caughtUp:
		return false, nil
	case at.isStale():
		return true, nil
	}
	code := st.ExitCode
	msg := st.Message
	if why := at.files.overLimit(); why != "" {
		msg = why
	}
	err = ag.client.report(ctx, agentapi.Report{AttemptRef: at.ref, Event: agentapi.EventExited, ExitCode: &code, Signal: st.Signal, Message: msg})
	if errors.Is(err, errStale) {
		at.markStale()
		return true, nil
	}
	return err == nil, err
}

// stopProtocol is the stop of one attempt: a checkpoint request and the grace to
// save one, then SIGTERM, then after the kill grace SIGKILL.
// The job may cut the grace short by telling the server it saved its checkpoint.
// A stop of a container that does not run yet stops its start while its image is
// pulled; once the container is launched, the protocol begins when it runs.
type stopProtocol struct {
	phase    int // 0 running, 1 checkpointing, 2 terminated, 3 killed
	deadline time.Time
	// pending is the stop of a container that does not run yet.
	pending *agentapi.Stop
}

func (p *stopProtocol) begin(s agentapi.Stop, ag *Agent, at *attempt, log *slog.Logger) {
	if p.phase == 1 && s.CheckpointSaved && time.Now().Before(p.deadline) {
		log.Info("the job saved its checkpoint: stopping it without waiting out the grace")
		p.deadline = time.Now()
		return
	}
	if p.phase != 0 {
		return
	}
	if at.ctr != nil && at.files.jobPID() <= 0 {
		if p.pending == nil {
			log.Info("stopping the attempt's start, or the attempt once its container runs", "reason", s.Reason)
			// While its image is pulled this ends the start; a launched container runs first.
			at.signal(syscall.SIGTERM)
		}
		p.pending = &s
		return
	}
	p.pending = nil
	log.Info("stopping the attempt", "reason", s.Reason, "grace_ms", s.GraceMS)
	if s.GraceMS > 0 && !s.CheckpointSaved {
		req, _ := json.Marshal(map[string]any{
			"reason": s.Reason, "message": s.Message,
			"deadline": time.Now().UTC().Add(time.Duration(s.GraceMS) * time.Millisecond),
		})
		if err := writeFileAtomic(filepath.Join(at.checkpoint, CheckpointRequestFile), req, 0o644); err == nil {
			if at.signal(syscall.SIGUSR1) == nil {
				p.phase, p.deadline = 1, time.Now().Add(time.Duration(s.GraceMS)*time.Millisecond)
				return
			}
		}
	}
	p.phase, p.deadline = 1, time.Now()
}

// advance moves to the next step once the current one's time is up, and begins a
// pending stop once its container runs.
func (p *stopProtocol) advance(ag *Agent, at *attempt, log *slog.Logger) {
	if p.pending != nil {
		p.begin(*p.pending, ag, at, log)
		return
	}
	if p.phase == 0 || p.phase == 3 || time.Now().Before(p.deadline) {
		return
	}
	sig, next := syscall.SIGTERM, 2
	if p.phase == 2 {
		sig, next = syscall.SIGKILL, 3
	}
	if err := at.signal(sig); err != nil {
		return // no pid yet: try again on the next tick
	}
	log.Info("signalled the attempt", "signal", signalName(sig))
	p.phase, p.deadline = next, time.Now().Add(ag.killGrace())
}

// backoff spaces retries of a failing request: 250 ms doubling to 5 s.
type backoff struct {
	delay time.Duration
	next  time.Time
}

func (b *backoff) ready() bool { return !time.Now().Before(b.next) }

func (b *backoff) reset() { b.delay, b.next = 0, time.Time{} }

func (b *backoff) fail() time.Duration {
	b.delay = min(max(b.delay*2, 250*time.Millisecond), 5*time.Second)
	b.next = time.Now().Add(b.delay)
	return b.delay
}

func (b *backoff) wait() time.Duration { return max(time.Until(b.next), superviseTick) }

// removeStaleRequest deletes a checkpoint request left by an earlier attempt.
func removeStaleRequest(checkpoint string) {
	os.Remove(filepath.Join(checkpoint, CheckpointRequestFile))
}
