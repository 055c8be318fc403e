package agent

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var noticeNow = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// The three clouds' notices as their metadata services publish them.
func TestParseNotice(t *testing.T) {
	cases := []struct {
		name, format string
		status       int
		body         string
		deadline     time.Time
		reason       string
		err          string
	}{
		{"aws nothing scheduled", NoticeAWS, 404, "Not Found", time.Time{}, "", ""},
		{"aws terminate", NoticeAWS, 200, `{"action": "terminate", "time": "2026-03-02T09:02:00Z"}`, noticeNow.Add(2 * time.Minute), "AWS spot instance-action: terminate", ""},
		{"aws stop", NoticeAWS, 200, `{"action": "stop", "time": "2026-03-02T09:02:00Z"}`, noticeNow.Add(2 * time.Minute), "instance-action: stop", ""},
		{"aws garbage", NoticeAWS, 200, `<html>`, time.Time{}, "", "not {\"action\", \"time\"}"},
		{"aws error", NoticeAWS, 500, ``, time.Time{}, "", "answered 500"},
		{"gcp running", NoticeGCP, 200, "FALSE", time.Time{}, "", ""},
		{"gcp preempted", NoticeGCP, 200, "TRUE", noticeNow.Add(30 * time.Second), "GCP instance preempted", ""},
		{"gcp garbage", NoticeGCP, 200, "maybe", time.Time{}, "", "not TRUE or FALSE"},
		{"azure nothing", NoticeAzure, 200, `{"DocumentIncarnation": 1, "Events": []}`, time.Time{}, "", ""},
		{"azure freeze only", NoticeAzure, 200, `{"DocumentIncarnation": 2, "Events": [{"EventId": "a", "EventType": "Freeze", "EventStatus": "Scheduled", "NotBefore": "Mon, 02 Mar 2026 09:00:15 GMT"}]}`, time.Time{}, "", ""},
		{"azure preempt", NoticeAzure, 200, `{"DocumentIncarnation": 3, "Events": [{"EventId": "602d9444", "EventType": "Preempt", "ResourceType": "VirtualMachine",
			"Resources": ["vm1"], "EventStatus": "Scheduled", "NotBefore": "Mon, 02 Mar 2026 09:00:30 GMT", "EventSource": "Platform"}]}`,
			noticeNow.Add(30 * time.Second), "Azure scheduled event Preempt 602d9444", ""},
		{"azure bad time", NoticeAzure, 200, `{"Events": [{"EventId": "b", "EventType": "Preempt", "EventStatus": "Scheduled", "NotBefore": "soon"}]}`, time.Time{}, "", "RFC 1123"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := parseNotice(c.format, c.status, []byte(c.body), noticeNow)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want error %q, got %v (%+v)", c.err, err, n)
				}
			case err != nil:
				t.Fatal(err)
			case c.deadline.IsZero():
				if n != nil {
					t.Fatalf("want no notice, got %+v", n)
				}
			case n == nil || !n.Deadline.Equal(c.deadline) || !strings.Contains(n.Reason, c.reason):
				t.Fatalf("notice %+v, want deadline %s reason %q", n, c.deadline, c.reason)
			}
		})
	}
}

func TestNoticeFormatOf(t *testing.T) {
	for url, want := range map[string]string{
		"http://169.254.169.254/latest/meta-data/spot/instance-action":                  NoticeAWS,
		"http://metadata.google.internal/computeMetadata/v1/instance/preempted":         NoticeGCP,
		"http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01":        NoticeAzure,
		"http://127.0.0.1:9/computeMetadata/v1/instance/preempted?wait_for_change=true": NoticeGCP,
	} {
		if got, err := NoticeFormatOf(url); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", url, got, err, want)
		}
	}
	for _, bad := range []string{"http://169.254.169.254/latest/meta-data/", "ftp://x/instance/preempted", "::"} {
		if _, err := NoticeFormatOf(bad); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

// syncBuffer is a log sink safe for the watcher's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The AWS endpoint served locally: IMDSv2 token first, down for a while, then the
// notice. The watcher retries with back-off, logs the outage once and its end once,
// and reports the notice once.
func TestNoticeWatcherRetriesAndReportsOnce(t *testing.T) {
	var calls, downFor atomic.Int64
	downFor.Store(4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				http.Error(w, "ttl required", http.StatusBadRequest)
				return
			}
			w.Write([]byte("tok-123"))
		case r.URL.Path == "/latest/meta-data/spot/instance-action":
			if r.Header.Get("X-aws-ec2-metadata-token") != "tok-123" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			n := calls.Add(1)
			switch {
			case n <= downFor.Load():
				http.Error(w, "metadata service unavailable", http.StatusServiceUnavailable)
			case n <= downFor.Load()+2:
				http.NotFound(w, r)
			default:
				w.Write([]byte(`{"action": "terminate", "time": "2026-03-02T09:02:00Z"}`))
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var logs syncBuffer
	w := &noticeWatcher{endpoint: srv.URL + "/latest/meta-data/spot/instance-action", format: NoticeAWS, every: 5 * time.Millisecond,
		http: srv.Client(), log: slog.New(slog.NewTextHandler(&logs, nil)), now: func() time.Time { return noticeNow }}
	ctx, cancel := context.WithCancel(context.Background())
	found := make(chan struct{}, 10)
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); w.run(ctx, func() { found <- struct{}{} }) }()
	select {
	case <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("no notice; log:\n%s", logs.String())
	}
	// Back-off: 4 failures wait 10+20+40+80 ms before the endpoint answers.
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("the notice came after %s: the failing endpoint was not backed off", d)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if len(found) != 0 {
		t.Fatalf("the notice was reported %d more times", len(found))
	}
	n := w.current()
	if n == nil || !n.Deadline.Equal(noticeNow.Add(2*time.Minute)) {
		t.Fatalf("kept notice %+v", n)
	}
	out := logs.String()
	if strings.Count(out, "cannot read the interruption notice endpoint") != 1 || strings.Count(out, "answers again") != 1 {
		t.Fatalf("want the outage logged once and its end once:\n%s", out)
	}
}

// GCP and Azure want their metadata headers; without them they refuse, as the real ones do.
func TestNoticeWatcherSendsTheCloudHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/computeMetadata/v1/instance/preempted":
			if r.Header.Get("Metadata-Flavor") != "Google" {
				http.Error(w, "Missing Metadata-Flavor:Google header", http.StatusForbidden)
				return
			}
			w.Write([]byte("TRUE"))
		case "/metadata/scheduledevents":
			if r.Header.Get("Metadata") != "true" {
				http.Error(w, "Required metadata header not specified", http.StatusBadRequest)
				return
			}
			w.Write([]byte(`{"DocumentIncarnation": 1, "Events": [{"EventId": "e1", "EventType": "Preempt", "EventStatus": "Scheduled", "NotBefore": "Mon, 02 Mar 2026 09:00:30 GMT"}]}`))
		}
	}))
	defer srv.Close()
	for path, format := range map[string]string{"/computeMetadata/v1/instance/preempted": NoticeGCP, "/metadata/scheduledevents?api-version=2020-07-01": NoticeAzure} {
		w := &noticeWatcher{endpoint: srv.URL + path, format: format, every: time.Second, http: srv.Client(), log: slog.Default(), now: func() time.Time { return noticeNow }}
		n, err := w.poll(context.Background())
		if err != nil || n == nil || !n.Deadline.Equal(noticeNow.Add(30*time.Second)) {
			t.Fatalf("%s: %+v, %v", format, n, err)
		}
	}
}
