package dispatch_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestScheduleStartLogsAndSucceed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xA100-80GB")
		j := e.submit("train", 2)
		big := e.submit("too-big", 3)
		e.svc.Tick(e.ctx)
		got := e.wantState(j.ID, models.JobScheduled)
		if got.Attempt != 1 {
			t.Fatalf("attempt = %d, want 1", got.Attempt)
		}
		if w := e.wantState(big.ID, models.JobQueued); w.PendingReason != "no node has 3 free GPUs" {
			t.Errorf("pending reason = %q", w.PendingReason)
		}
		ls := e.leases(n)
		if len(ls.Allocations) != 1 || ls.Version == "" {
			t.Fatalf("leases = %+v", ls)
		}
		l := ls.Allocations[0]
		if l.JobID != j.ID || l.Attempt != 1 || len(l.Devices) != 2 || l.Devices[0].UUID != n.gpus[0] || l.Devices[1].Milli != 1000 ||
			!slices.Equal(l.Command, []string{"python", "train.py"}) || l.Env["EPOCHS"] != "3" || l.Stop != nil || l.Started {
			t.Fatalf("lease = %+v", l)
		}
		ref := l.AttemptRef
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		e.mustReport(n, ref, agentapi.EventStarted, nil) // a retried report is harmless
		if ended(e.svc) {
			t.Error("a start signalled an ended allocation")
		}
		if running := e.wantState(j.ID, models.JobRunning); running.StartedAt == nil {
			t.Fatal("running job has no start time")
		}
		if l2 := e.leases(n); !l2.Allocations[0].Started || l2.Version == ls.Version {
			t.Fatalf("after start: lease %+v, version %s (was %s)", l2.Allocations[0], l2.Version, ls.Version)
		}

		chunk := func(stream string, off int64, data string) (int64, error) {
			ack, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: ref, Stream: stream, Offset: off, Data: []byte(data)})
			if ack.Full {
				t.Errorf("%s is full after %d bytes", stream, ack.NextOffset)
			}
			return ack.NextOffset, err
		}
		steps := []struct {
			stream string
			off    int64
			data   string
			next   int64
		}{
			{"stdout", 0, "epoch 1\n", 8},
			{"stdout", 0, "epoch 1\n", 8},         // resent: dropped
			{"stdout", 4, "h 1\nepoch 2\n", 16},   // overlaps: only the new bytes kept
			{"stderr", 0, "warning: slow\n", 14},  // streams are independent
			{"stdout", 16, "epoch 3\ndone\n", 29}, // continues
		}
		for _, s := range steps {
			next, err := chunk(s.stream, s.off, s.data)
			if err != nil || next != s.next {
				t.Fatalf("chunk %s@%d = %d, %v; want %d", s.stream, s.off, next, err, s.next)
			}
		}
		var off *dispatch.LogOffsetError
		if _, err := chunk("stdout", 40, "gap"); !errors.As(err, &off) || off.Next != 29 {
			t.Fatalf("chunk past the end: %v, want a LogOffsetError at 29", err)
		}
		var fe *models.FieldError
		if _, err := chunk("stdin", 0, "x"); !errors.As(err, &fe) || fe.Field != "stream" {
			t.Fatalf("chunk of a bad stream: %v", err)
		}
		chunks, _ := st.LogChunks(e.ctx, store.LogFilter{JobID: j.ID, Attempt: 1, Stream: "stdout"})
		var out []byte
		for _, c := range chunks {
			out = append(out, c.Data...)
		}
		if !bytes.Equal(out, []byte("epoch 1\nepoch 2\nepoch 3\ndone\n")) {
			t.Fatalf("stdout = %q", out)
		}

		e.mustReport(n, ref, agentapi.EventExited, code(0))
		e.mustReport(n, ref, agentapi.EventExited, code(0)) // a retried report is harmless
		if !ended(e.svc) {
			t.Error("the exit did not signal an ended allocation, so metering would wait for its next round")
		}
		done := e.wantState(j.ID, models.JobSucceeded)
		if done.ExitCode == nil || *done.ExitCode != 0 || done.FinishedAt == nil {
			t.Fatalf("succeeded job = %+v", done)
		}
		if len(e.leases(n).Allocations) != 0 {
			t.Fatal("an ended allocation is still leased")
		}
		// Logs that trail the exit report are still taken.
		if next, err := chunk("stderr", 14, "bye\n"); err != nil || next != 18 {
			t.Fatalf("late chunk = %d, %v", next, err)
		}
		evs, _ := st.JobEvents(e.ctx, j.ID)
		var trail []string
		for _, ev := range evs {
			trail = append(trail, ev.ToState+":"+ev.Reason)
		}
		want := []string{"queued:submitted", "scheduled:scheduled", "running:started", "succeeded:succeeded"}
		if !slices.Equal(trail, want) {
			t.Fatalf("events = %v, want %v", trail, want)
		}
		if !strings.Contains(evs[1].Message, "node gpu-1 GPUs "+n.gpus[0]) {
			t.Errorf("scheduled message = %q", evs[1].Message)
		}
	})
}

func TestFailureRetriesThenFails(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("flaky", 1, func(j *models.Job) { j.MaxRetries = 1 })
		for attempt := 1; attempt <= 2; attempt++ {
			e.svc.Tick(e.ctx)
			ref := agentapi.AttemptRef{JobID: j.ID, Attempt: attempt}
			e.mustReport(n, ref, agentapi.EventStarted, nil)
			if err := e.svc.Report(e.ctx, n.Node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: code(3), Message: "CUDA out of memory"}); err != nil {
				t.Fatal(err)
			}
		}
		got := e.wantState(j.ID, models.JobFailed)
		if got.ExitCode == nil || *got.ExitCode != 3 || got.Retries != 1 || got.Attempt != 2 {
			t.Fatalf("failed job = exit %v retries %d attempt %d", got.ExitCode, got.Retries, got.Attempt)
		}
		evs, _ := st.JobEvents(e.ctx, j.ID)
		var msgs []string
		for _, ev := range evs {
			msgs = append(msgs, ev.Message)
		}
		joined := strings.Join(msgs, "|")
		for _, want := range []string{"attempt 1 exited with code 3 (CUDA out of memory); retry 1 of 1", "attempt 2 exited with code 3 (CUDA out of memory); its one retry used"} {
			if !strings.Contains(joined, want) {
				t.Errorf("events lack %q: %v", want, msgs)
			}
		}
	})
}

func TestStaleReportsAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		a := e.join("gpu-a", "1xL4-24GB")
		b := e.join("gpu-b", "1xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		owner, other := a, b
		if len(e.leases(a).Allocations) == 0 {
			owner, other = b, a
		}
		for name, err := range map[string]error{
			"from another node":   e.report(other, ref, agentapi.EventStarted, nil),
			"of a future attempt": e.report(owner, agentapi.AttemptRef{JobID: j.ID, Attempt: 2}, agentapi.EventStarted, nil),
			"of another replica":  e.report(owner, agentapi.AttemptRef{JobID: j.ID, Attempt: 1, Replica: 1}, agentapi.EventStarted, nil),
		} {
			if !errors.Is(err, dispatch.ErrStaleAttempt) {
				t.Errorf("report %s: %v, want ErrStaleAttempt", name, err)
			}
		}
		if _, err := e.svc.AppendLog(e.ctx, other.Node, agentapi.LogChunk{AttemptRef: ref, Stream: "stdout", Data: []byte("x")}); !errors.Is(err, dispatch.ErrStaleAttempt) {
			t.Errorf("log from another node: %v, want ErrStaleAttempt", err)
		}
		var fe *models.FieldError
		for _, bad := range []agentapi.Report{
			{AttemptRef: ref, Event: "paused"},
			{AttemptRef: ref, Event: agentapi.EventExited},
			{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: code(300)},
			{AttemptRef: agentapi.AttemptRef{JobID: j.ID}, Event: agentapi.EventStarted},
		} {
			if err := e.svc.Report(e.ctx, owner.Node, bad); !errors.As(err, &fe) {
				t.Errorf("malformed report %+v: %v, want a FieldError", bad, err)
			}
		}
		if got := e.wantState(j.ID, models.JobScheduled); got.StartedAt != nil {
			t.Fatal("a refused report changed the job")
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		queued := e.submit("waiting", 5)
		running := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: running.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)

		if _, err := e.svc.CancelJob(e.ctx, queued.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		e.wantState(queued.ID, models.JobCancelled)
		j, err := e.svc.CancelJob(e.ctx, running.ID, "user:ada", "wrong data set")
		if err != nil || j.State != models.JobCancelled {
			t.Fatalf("cancel running = %+v, %v", j, err)
		}
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.Reason != agentapi.StopCancel || l[0].Stop.GraceMS != 0 {
			t.Fatalf("lease after cancel = %+v", l)
		}
		// The cancelled attempt holds its GPU until its agent says it ended.
		next := e.submit("next", 1)
		e.svc.Tick(e.ctx)
		e.wantState(next.ID, models.JobQueued)
		e.mustReport(n, ref, agentapi.EventExited, code(-1))
		e.wantState(running.ID, models.JobCancelled)
		e.svc.Tick(e.ctx)
		e.wantState(next.ID, models.JobScheduled)
		if _, err := e.svc.CancelJob(e.ctx, running.ID, "user:ada", ""); !errors.Is(err, dispatch.ErrFinished) {
			t.Fatalf("cancel of a cancelled job: %v, want ErrFinished", err)
		}
		if !slices.Contains(e.auditActions(), "job.cancelled") {
			t.Error("cancel not audited")
		}
	})
}

// A scheduled job whose attempt never started is cancelled at once; an agent
// that starts it anyway is told the attempt is stale.
func TestCancelBeforeStart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		if _, err := e.svc.CancelJob(e.ctx, j.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		if len(e.leases(n).Allocations) != 0 {
			t.Fatal("a cancelled attempt that never started is still leased")
		}
		if err := e.report(n, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil); !errors.Is(err, dispatch.ErrStaleAttempt) {
			t.Fatalf("start of a cancelled attempt: %v, want ErrStaleAttempt", err)
		}
	})
}

func TestLeasePollWaitsForWork(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		empty := e.leases(n)
		got := make(chan agentapi.Leases, 1)
		go func() {
			l, err := e.svc.Leases(e.ctx, n.Node, empty.Version, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		select {
		case l := <-got:
			if len(l.Allocations) != 1 || l.Allocations[0].JobID != j.ID {
				t.Fatalf("woken poll = %+v", l)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the poll was not woken by the new allocation (LeaseRecheck is a minute in this test)")
		}
	})
}
