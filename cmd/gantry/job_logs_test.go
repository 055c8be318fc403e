package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// An answer cut short is asked again, and what was printed of it is not printed twice;
// a server that fails is asked again; the follower stops once the attempt has ended.
func TestFollowAsksAgainWithoutRepeating(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/jobs/1" {
			w.Write([]byte(`{"state": "succeeded", "attempt": 1}`))
			return
		}
		n := calls.Add(1)
		h := w.Header()
		h.Set("X-Gantry-Attempt", "1")
		switch {
		case n == 1: // the first answer is cut after four of its ten bytes
			h.Set("X-Gantry-Log-Cursor", "7")
			h.Set("Content-Length", "10")
			w.Write([]byte("line"))
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case n == 2:
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		case r.URL.Query().Get("after") == "":
			h.Set("X-Gantry-Log-Cursor", "7")
			h.Set("X-Gantry-Attempt-Ended", "false")
			w.Write([]byte("line one\n"))
		case r.URL.Query().Get("after") == "7" && r.URL.Query().Get("attempt") == "1":
			h.Set("X-Gantry-Log-Cursor", "9")
			h.Set("X-Gantry-Attempt-Ended", "true")
			w.Write([]byte("two\n"))
		default:
			t.Errorf("asked %s", r.URL.RawQuery)
			http.Error(w, "unexpected", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	var out, said strings.Builder
	l := &logReader{c: &apiClient{base: srv.URL, http: srv.Client()}, id: 1, out: &out, errOut: &said, q: url.Values{}}
	if err := l.follow(context.Background()); err != nil {
		t.Fatalf("follow: %v (said %q)", err, said.String())
	}
	if out.String() != "line one\ntwo\n" || calls.Load() != 4 {
		t.Errorf("printed %q in %d calls; want each line once, in four", out.String(), calls.Load())
	}
	if !strings.Contains(said.String(), "asking again until it answers") {
		t.Errorf("said %q", said.String())
	}
}

// Without --attempt the follower goes on with the job's next attempt (a retry, a
// release after a hold) and ends with the job; with --attempt it ends with that one.
func TestFollowGoesOnWithTheNextAttempt(t *testing.T) {
	t.Parallel()
	var jobAsked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/api/v1/jobs/1":
			w.Header().Set("Content-Type", "application/json")
			switch jobAsked.Add(1) {
			case 1:
				w.Write([]byte(`{"state": "queued", "attempt": 1}`))
			case 2:
				w.Write([]byte(`{"state": "running", "attempt": 2}`))
			default:
				w.Write([]byte(`{"state": "succeeded", "attempt": 2}`))
			}
		case q.Get("attempt") == "" || q.Get("attempt") == "1":
			w.Header().Set("X-Gantry-Attempt", "1")
			w.Header().Set("X-Gantry-Log-Cursor", "3")
			w.Header().Set("X-Gantry-Attempt-Ended", "true")
			if q.Get("after") == "" {
				w.Write([]byte("one\n"))
			}
		case q.Get("attempt") == "2":
			w.Header().Set("X-Gantry-Attempt", "2")
			w.Header().Set("X-Gantry-Log-Cursor", "5")
			w.Header().Set("X-Gantry-Attempt-Ended", "true")
			if q.Get("after") == "" {
				w.Write([]byte("two\n"))
			}
		}
	}))
	defer srv.Close()
	follow := func(q url.Values, pinned bool) (string, string) {
		var out, said strings.Builder
		l := &logReader{c: &apiClient{base: srv.URL, http: srv.Client()}, id: 1, out: &out, errOut: &said, q: q, pinned: pinned}
		if err := l.follow(context.Background()); err != nil {
			t.Fatalf("follow: %v", err)
		}
		return out.String(), said.String()
	}
	if out, said := follow(url.Values{}, false); out != "one\ntwo\n" || said != "Attempt 2 of job 1 started (running).\n" {
		t.Errorf("followed %q, said %q; want both attempts' output and the second's start", out, said)
	}
	asked := jobAsked.Load()
	if out, _ := follow(url.Values{"attempt": {"1"}}, true); out != "one\n" || jobAsked.Load() != asked {
		t.Errorf("followed attempt 1: %q, asking for the job %d times; want its output alone", out, jobAsked.Load()-asked)
	}
}
