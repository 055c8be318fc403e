package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A submission whose answer is lost, or that the server fails, is sent again with the
// same Idempotency-Key; one it refuses is not sent again.
func TestSubmitJobSendsAgainWithTheSameKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	keys := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		switch calls.Add(1) {
		case 1: // queued, and the answer lost
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		case 2:
			http.Error(w, "restarting", http.StatusBadGateway)
		default:
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"id": 7, "state": "queued"}`))
		}
	}))
	defer srv.Close()
	var said strings.Builder
	raw, err := submitJob(context.Background(), &apiClient{base: srv.URL, http: srv.Client()}, []byte(`{}`), &said)
	if err != nil || string(raw) != `{"id": 7, "state": "queued"}` || calls.Load() != 3 {
		t.Fatalf("submitJob = %s, %v after %d calls", raw, err, calls.Load())
	}
	close(keys)
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "gantry-cli-") || got[1] != got[0] || got[2] != got[0] {
		t.Errorf("keys sent: %q; want one key, three times", got)
	}
	if strings.Count(said.String(), "sending the job again") != 2 {
		t.Errorf("said %q", said.String())
	}

	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error": {"code": "invalid", "message": "is missing", "field": "project"}}`))
	}))
	defer refused.Close()
	before := calls.Load()
	if _, err := submitJob(context.Background(), &apiClient{base: refused.URL, http: refused.Client()}, []byte(`{}`), &said); err == nil || calls.Load() != before+1 {
		t.Errorf("a refused job: %v after %d calls; want the error after one", err, calls.Load()-before)
	}
}
