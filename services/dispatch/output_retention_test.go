package dispatch_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// With a log retention, a pass deletes the output of the jobs that ended longer ago
// than it (chunks and the clear tail kept for masking), says so on each one's timeline
// and in the audit log, and leaves the output of jobs that ended since, or that still
// run; a later pass deletes nothing twice and takes the next jobs as they age. Without
// a retention nothing is deleted; a retention under a day is refused.
func TestOutputPastTheRetentionIsDeleted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "4xA100-80GB")
		old, recent, running := e.submit("old", 1), e.submit("recent", 1), e.submit("running", 1)
		if err := st.SetJobSecretEnv(e.ctx, old.ID, map[string]string{"DB_PASSWORD": "hunter2"}); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		refs := map[int64]agentapi.AttemptRef{}
		for _, l := range e.leases(n).Allocations {
			e.mustReport(n, l.AttemptRef, agentapi.EventStarted, nil)
			refs[l.JobID] = l.AttemptRef
			// old's output ends with what could begin its secret: its tail is kept in clear.
			if _, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: l.AttemptRef, Stream: "stdout", Data: []byte("epoch 1\nhun")}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.LogTail(e.ctx, old.ID, 1, 0, "stdout"); err != nil {
			t.Fatalf("old's tail before: %v", err)
		}
		// The store stamps ends by the wall clock, the service's clock is the test's: it
		// goes to 7 days after a moment between the two ends.
		zero := 0
		e.mustReport(n, refs[old.ID], agentapi.EventExited, &zero)
		time.Sleep(10 * time.Millisecond)
		e.mustReport(n, refs[recent.ID], agentapi.EventExited, &zero)
		oldEnd, recentEnd := *e.wantState(old.ID, "succeeded").FinishedAt, *e.wantState(recent.ID, "succeeded").FinishedAt
		week := 7 * 24 * time.Hour
		e.clock.advance(oldEnd.Add(recentEnd.Sub(oldEnd) / 2).Add(week).Sub(e.clock.now()))

		output := func(id int64) int {
			chunks, err := st.LogChunks(e.ctx, store.LogFilter{JobID: id, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			return len(chunks)
		}
		deletions := func(id int64) (timeline []string, audited int) {
			evs, err := st.JobEvents(e.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Reason == dispatch.ReasonLogRetention {
					timeline = append(timeline, ev.Message+" by "+ev.Actor)
				}
			}
			for _, a := range e.jobAudit(0, id) {
				if a == "job.output_deleted by system" {
					audited++
				}
			}
			return timeline, audited
		}
		pass := func(svc *dispatch.Service, want int) {
			t.Helper()
			jobs, chunks, err := svc.DeleteAgedOutputOnce(e.ctx)
			if err != nil || jobs != want || (chunks > 0) != (want > 0) {
				t.Fatalf("a pass deleted the output of %d jobs (%d chunks), %v; want %d", jobs, chunks, err, want)
			}
		}

		pass(e.svc, 0) // no retention: kept for good
		if output(old.ID) == 0 {
			t.Fatal("without a retention, old's output was deleted")
		}

		cfg := testConfig
		cfg.LogRetention = week
		svc := e.restartWith(dispatchtest.FirstFit{}, cfg)
		pass(svc, 1)
		if output(old.ID) != 0 || output(recent.ID) == 0 || output(running.ID) == 0 {
			t.Errorf("after the first pass: old %d chunks, recent %d, running %d; want only old's gone", output(old.ID), output(recent.ID), output(running.ID))
		}
		if _, err := st.LogTail(e.ctx, old.ID, 1, 0, "stdout"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("old's clear tail outlived its output: %v", err)
		}
		want := []string{"output deleted: a job's output is kept 7 days after it ends by system"}
		if tl, audited := deletions(old.ID); !slices.Equal(tl, want) || audited != 1 {
			t.Errorf("old's timeline says %q and the audit log %d deletions; want %q and 1", tl, audited, want)
		}
		if tl, audited := deletions(recent.ID); len(tl) != 0 || audited != 0 {
			t.Errorf("recent's output is kept, but its timeline says %q and the audit log %d deletions", tl, audited)
		}

		pass(svc, 0) // nothing twice
		if tl, audited := deletions(old.ID); len(tl) != 1 || audited != 1 {
			t.Errorf("a second pass said it again: %q, %d", tl, audited)
		}

		// An agent offline since old ended ships the rest of its output, or all of it
		// again: none is kept, and the answer says to send no more. recent's is kept.
		for _, c := range []agentapi.LogChunk{
			{AttemptRef: refs[old.ID], Stream: "stdout", Offset: 11, Data: []byte("ter2 epoch 2\n")},
			{AttemptRef: refs[old.ID], Stream: "stdout", Data: []byte("epoch 1\nhunter2 epoch 2\n")},
		} {
			ack, err := svc.AppendLog(e.ctx, n.Node, c)
			if err != nil || !ack.Full || ack.NextOffset != c.Offset+int64(len(c.Data)) || output(old.ID) != 0 {
				t.Errorf("old's output shipped late from %d: %+v, %v, %d chunks stored; want taken, not kept, and full", c.Offset, ack, err, output(old.ID))
			}
		}
		if ack, err := svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: refs[recent.ID], Stream: "stdout", Offset: 11, Data: []byte("late\n")}); err != nil || ack.Full || output(recent.ID) != 2 {
			t.Errorf("recent's output shipped late: %+v, %v, %d chunks; want kept", ack, err, output(recent.ID))
		}

		e.clock.advance(recentEnd.Add(week + time.Millisecond).Sub(e.clock.now())) // recent ended over a week ago
		pass(e.restartWith(dispatchtest.FirstFit{}, cfg), 1)
		if output(recent.ID) != 0 || output(running.ID) == 0 {
			t.Errorf("after recent aged: recent %d chunks, running %d; want recent's gone, running's kept", output(recent.ID), output(running.ID))
		}

		cfg.LogRetention = time.Hour
		if _, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: e.audit, Now: e.clock.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, cfg); err == nil {
			t.Error("a log retention of an hour was taken")
		}
	})
}

// One pass takes every aged job however many transactions it needs, and each once;
// also after a replica whose clock ran ahead recorded a pass in the future.
func TestOutputRetentionTakesEveryAgedJobInBatches(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		const n = 450 // over two batches
		ids := make([]int64, n)
		for i := range ids {
			j := e.submit(fmt.Sprintf("j%d", i), 0)
			if err := st.TransitionJob(e.ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled, Reason: "cancelled"}); err != nil {
				t.Fatal(err)
			}
			if err := st.CreateLogChunk(e.ctx, &models.JobLogChunk{JobID: j.ID, Stream: "stdout", Data: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			ids[i] = j.ID
		}
		cfg := testConfig
		cfg.LogRetention = 24 * time.Hour
		e.clock.advance(2 * 24 * time.Hour)
		if err := st.PutSetting(e.ctx, "output_retention_done_before", e.clock.now().AddDate(1, 0, 0).Format(time.RFC3339Nano)); err != nil {
			t.Fatal(err)
		}
		jobs, chunks, err := e.restartWith(dispatchtest.FirstFit{}, cfg).DeleteAgedOutputOnce(e.ctx)
		if err != nil || jobs != n || chunks != n {
			t.Fatalf("a pass deleted the output of %d jobs (%d chunks), %v; want %d", jobs, chunks, err, n)
		}
		for _, id := range ids {
			evs, err := st.JobEvents(e.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			said := 0
			for _, ev := range evs {
				if ev.Reason == dispatch.ReasonLogRetention {
					said++
				}
			}
			if said != 1 {
				t.Fatalf("job %d's timeline says %d times its output was deleted", id, said)
			}
		}
	})
}
