package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// A stream the server says is full (its log limit) is sent no more, across passes
// and restarts of the agent (the mark is saved with the offsets), and what the job
// writes to it is dropped from the node's disk, while the other stream goes on.
func TestShipStopsAtAFullStream(t *testing.T) {
	const limit = 100_000
	var mu sync.Mutex
	sent := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c agentapi.LogChunk
		if r.URL.Path != agentapi.PathLogs || json.NewDecoder(r.Body).Decode(&c) != nil {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		sent[c.Stream] += len(c.Data)
		mu.Unlock()
		next := c.Offset + int64(len(c.Data))
		json.NewEncoder(w).Encode(agentapi.LogAck{NextOffset: next, Full: next >= limit})
	}))
	defer srv.Close()
	c, err := newClient(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	f := attemptFiles{dir: t.TempDir()}
	write := func(stream string, n int) {
		t.Helper()
		out, err := os.OpenFile(f.path(stream+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if _, err := out.WriteString(strings.Repeat("x", n)); err != nil {
			t.Fatal(err)
		}
	}
	write(agentapi.StreamStdout, 3*shipChunk)
	write(agentapi.StreamStderr, 10)
	ref := agentapi.AttemptRef{JobID: 1, Attempt: 1}
	for pass := range 3 {
		ag := &Agent{client: c, log: discard()} // a new agent each pass: what it knows is in the files
		done, err := ag.shipLogs(context.Background(), ref, f)
		if err != nil || !done {
			t.Fatalf("pass %d: caught up %v, %v", pass, done, err)
		}
		write(agentapi.StreamStdout, shipChunk)
		write(agentapi.StreamStderr, 10)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent[agentapi.StreamStdout] != 2*shipChunk || sent[agentapi.StreamStderr] != 30 {
		t.Errorf("sent %v; want stdout's two chunks up to the limit and all of stderr", sent)
	}
	for stream, want := range map[string]int64{agentapi.StreamStdout: shipChunk, agentapi.StreamStderr: 40} {
		if fi, err := os.Stat(f.path(stream + ".log")); err != nil || fi.Size() != want {
			t.Errorf("%s on the node: %v, %v; want %d bytes", stream, fi, err, want)
		}
	}
}
