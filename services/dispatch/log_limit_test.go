package dispatch_test

import (
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A stream keeps its first LogLimit bytes: the chunk that reaches the limit is cut
// there, later chunks are taken (an agent that sends them anyway moves on) and not
// kept, wherever they start, every answer from the limit on says the stream is full,
// and the job's timeline says once what was not kept. Each stream has its own
// limit, and secret values are masked in what is kept as below the limit.
func TestLogLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		cfg := testConfig
		cfg.LogLimit = 20
		e.svc = e.restartWith(dispatchtest.FirstFit{}, cfg)
		n := e.join("gpu-1", "2xA100-80GB")
		chatty, secretive := e.submit("chatty", 1), e.submit("secretive", 1)
		if err := st.SetJobSecretEnv(e.ctx, secretive.ID, map[string]string{"DB_PASSWORD": "hunter2"}); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		refs := map[int64]agentapi.AttemptRef{}
		for _, l := range e.leases(n).Allocations {
			e.mustReport(n, l.AttemptRef, agentapi.EventStarted, nil)
			refs[l.JobID] = l.AttemptRef
		}
		for _, c := range []struct {
			job    int64
			stream string
			off    int64
			data   string
			want   agentapi.LogAck
		}{
			{chatty.ID, "stdout", 0, "0123456789", agentapi.LogAck{NextOffset: 10}},
			{chatty.ID, "stdout", 10, "abcdefghijklmno", agentapi.LogAck{NextOffset: 25, Full: true}}, // reaches the limit: cut at 20
			{chatty.ID, "stdout", 25, "more", agentapi.LogAck{NextOffset: 29, Full: true}},            // past it: taken, not kept
			{chatty.ID, "stdout", 10, "abcdefghijklmno", agentapi.LogAck{NextOffset: 25, Full: true}}, // resent
			{chatty.ID, "stdout", 0, "0123456789", agentapi.LogAck{NextOffset: 20, Full: true}},       // resent, all kept
			{chatty.ID, "stdout", 40, "gap", agentapi.LogAck{NextOffset: 43, Full: true}},             // a gap past the limit is no error
			{chatty.ID, "stderr", 0, "warning\n", agentapi.LogAck{NextOffset: 8}},                     // a stream of its own
			{chatty.ID, "stderr", 8, "at the limit", agentapi.LogAck{NextOffset: 20, Full: true}},     // reaches it exactly
			{chatty.ID, "stderr", 20, "beyond", agentapi.LogAck{NextOffset: 26, Full: true}},
			{secretive.ID, "stdout", 0, "0123456789", agentapi.LogAck{NextOffset: 10}},
			{secretive.ID, "stdout", 10, "hunter2 hunter2 hunter2", agentapi.LogAck{NextOffset: 33, Full: true}},
		} {
			ack, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: refs[c.job], Stream: c.stream, Offset: c.off, Data: []byte(c.data)})
			if err != nil || ack != c.want {
				t.Fatalf("job %d %s@%d: %+v, %v; want %+v", c.job, c.stream, c.off, ack, err, c.want)
			}
		}
		for _, want := range []struct {
			job            int64
			stream, stored string
		}{
			{chatty.ID, "stdout", "0123456789abcdefghij"},
			{chatty.ID, "stderr", "warning\nat the limit"},
			{secretive.ID, "stdout", "0123456789******* **"},
		} {
			chunks, err := st.LogChunks(e.ctx, store.LogFilter{JobID: want.job, Attempt: 1, Stream: want.stream})
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, c := range chunks {
				got = append(got, c.Data...)
			}
			if string(got) != want.stored {
				t.Errorf("job %d %s stored %q, want %q", want.job, want.stream, got, want.stored)
			}
		}
		for j, streams := range map[*models.Job][]string{chatty: {"stdout", "stderr"}, secretive: {"stdout"}} {
			events, err := st.JobEvents(e.ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, ev := range events {
				if ev.Reason == "log limit" && ev.Attempt == 1 && ev.ToState == models.JobRunning {
					notes = append(notes, ev.Message)
				}
			}
			var want []string
			for _, stream := range streams {
				want = append(want, stream+" reached 20 bytes, the most kept of one stream: what it writes after is not kept")
			}
			if !slices.Equal(notes, want) {
				t.Errorf("job %d's log limit events say %q; want %q", j.ID, notes, want)
			}
		}
	})
}
