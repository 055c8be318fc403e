package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// sse is one server-sent event.
type sse struct{ id, event, data string }

// readEvents reads a whole event stream (the server ends it), the request carrying
// header (Last-Event-ID, say).
func (s *jobSite) readEvents(c *http.Client, path string, header map[string]string) (*http.Response, []sse) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 4<<20) // an event carries a chunk of up to 256 KiB, escaped
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return res, out
}

// A job's page follows it from the queue to its end: why it waits, hold and release,
// where it ran (simulated GPUs labelled), its output as a stream of events that
// resumes where it stopped, and cancel; a viewer sees it without the actions.
func TestJobPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		token := s.csrf(ada, "/jobs/new")
		f := jobForm(token)
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		page := "/jobs/" + m[1]
		res, body := s.send(ada, "GET", res.Header.Get("Location"), "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "is queued. This page follows it live.") || !strings.Contains(body, "◷ queued") ||
			!strings.Contains(body, "The scheduler has not looked at it yet") || !strings.Contains(body, `hx-trigger="every 2s"`) ||
			!strings.Contains(body, "EPOCHS, LR") || strings.Contains(body, "0.1</") || !strings.Contains(body, "python train.py --note &#39;two words&#39;") {
			t.Fatalf("page of a queued job = %d %s", res.StatusCode, body)
		}
		s.disp.Tick(ctx)
		if _, body = s.send(ada, "GET", page, "", nil); !strings.Contains(body, "Why is this pending?") || !strings.Contains(body, "the cluster has no nodes") {
			t.Fatalf("page after a pass without nodes: %s", body)
		}
		if res, _ = s.send(ada, "POST", page+"/hold", url.Values{"csrf_token": {token}}.Encode(), nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("hold = %d", res.StatusCode)
		}
		if _, body = s.send(ada, "GET", page, "", nil); !strings.Contains(body, "⏸ held") || !strings.Contains(body, ">Release</button>") || !strings.Contains(body, "by user:ada") {
			t.Fatalf("page of a held job: %s", body)
		}
		res, _ = s.send(ada, "POST", page+"/hold", url.Values{"csrf_token": {token}}.Encode(), nil)
		if !strings.Contains(res.Header.Get("Location"), url.QueryEscape("Only a queued or running job can be held; this one is held")) {
			t.Fatalf("hold of a held job → %q", res.Header.Get("Location"))
		}
		s.send(ada, "POST", page+"/release", url.Values{"csrf_token": {token}}.Encode(), nil)

		// The stream of a job not started yet says so and lets the browser ask again.
		_, evs := s.readEvents(ada, page+"/logs/stream", nil)
		if len(evs) != 1 || evs[0].event != "waiting" {
			t.Fatalf("stream of a queued job = %+v", evs)
		}

		// A node joins; the job starts on it and writes output through the agent protocol.
		node := s.join("gpu-a", "2xA100-80GB")
		s.disp.Tick(ctx)
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 {
			t.Fatalf("leases = %+v, %v", leases, err)
		}
		ref := leases.Allocations[0].AttemptRef
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventStarted}); err != nil {
			t.Fatal(err)
		}
		for i, chunk := range []struct{ stream, text string }{{"stdout", "epoch 1\n"}, {"stderr", "warning: slow\n"}, {"stdout", "epoch 2\n"}} {
			offset := map[int]int64{0: 0, 1: 0, 2: 8}[i]
			if _, err := s.disp.AppendLog(ctx, node, agentapi.LogChunk{AttemptRef: ref, Stream: chunk.stream, Offset: offset, Data: []byte(chunk.text)}); err != nil {
				t.Fatal(err)
			}
		}
		_, body = s.send(ada, "GET", page, "", nil)
		if !strings.Contains(body, "▶ running") || !strings.Contains(body, "gpu-a") || !strings.Contains(body, ">SIMULATED</span>") ||
			!strings.Contains(body, "GPU 0 · A100-80GB") || strings.Contains(body, "Why is this pending?") {
			t.Fatalf("page of a running job: %s", body)
		}
		exit := 0
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit}); err != nil {
			t.Fatal(err)
		}
		res, evs = s.readEvents(ada, page+"/logs/stream", nil)
		if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" || len(evs) != 4 || evs[3].event != "end" {
			t.Fatalf("stream of an ended attempt (%s) = %+v", ct, evs)
		}
		var text []string
		for _, e := range evs[:3] {
			var d struct{ Stream, Text string }
			if err := json.Unmarshal([]byte(e.data), &d); err != nil || e.event != "log" || e.id == "" {
				t.Fatalf("log event %+v: %v", e, err)
			}
			text = append(text, d.Stream+":"+d.Text)
		}
		if strings.Join(text, "") != "stdout:epoch 1\nstderr:warning: slow\nstdout:epoch 2\n" || !strings.Contains(evs[3].data, `"state":"succeeded"`) {
			t.Fatalf("stream = %q, end %s", text, evs[3].data)
		}
		// A browser that reconnects after the first event gets the rest, and one stream alone.
		if _, rest := s.readEvents(ada, page+"/logs/stream?stream=stdout", map[string]string{"Last-Event-ID": evs[0].id}); len(rest) != 2 ||
			rest[0].event != "log" || !strings.Contains(rest[0].data, `epoch 2`) || rest[1].event != "end" {
			t.Fatalf("resumed stdout stream: %+v", rest)
		}
		_, body = s.send(ada, "GET", page, "", nil)
		if !strings.Contains(body, "✓ succeeded") || strings.Contains(body, `hx-trigger="every 2s"`) || strings.Contains(body, `id="cancel-job"`) {
			t.Fatalf("page of a finished job: %s", body)
		}
		res, _ = s.send(ada, "POST", page+"/cancel", url.Values{"csrf_token": {token}}.Encode(), nil)
		if !strings.Contains(res.Header.Get("Location"), url.QueryEscape("had already ended (succeeded)")) {
			t.Fatalf("cancel of a finished job → %q", res.Header.Get("Location"))
		}

		// A viewer reads the page without the actions; another project's user may not.
		vic := s.user("vic", "default", models.RoleViewer)
		if res, body := s.send(vic, "GET", page, "", nil); res.StatusCode != 200 || strings.Contains(body, ">Re-run</button>") || strings.Contains(body, ">Clone</a>") {
			t.Fatalf("page for a viewer = %d", res.StatusCode)
		}
		if res, _ := s.send(vic, "POST", page+"/cancel", url.Values{"csrf_token": {s.csrf(vic, page)}}.Encode(), nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("cancel as a viewer = %d", res.StatusCode)
		}
		c, _ := s.member("olga")
		if res, _ := s.send(c, "GET", page, "", nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("page for an outsider = %d", res.StatusCode)
		}
		if res, _ := s.send(ada, "GET", "/jobs/999999", "", nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("missing job = %d", res.StatusCode)
		}

		// Cancelling a running job from its page stops it.
		res, _ = s.send(ada, "POST", page+"/rerun", url.Values{"csrf_token": {token}}.Encode(), nil)
		again := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		s.disp.Tick(ctx)
		// It asks first: the button's post answers a page that asks, and changes nothing.
		res, body = s.send(ada, "POST", "/jobs/"+again[1]+"/cancel", url.Values{"csrf_token": {token}}.Encode(), nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "Cancel job train-1 (#"+again[1]+")?") || !strings.Contains(body, `name="confirm" value="yes"`) ||
			!strings.Contains(body, `href="/jobs/`+again[1]+`">Keep it</a>`) {
			t.Fatalf("cancel without confirmation = %d: %s", res.StatusCode, body)
		}
		if _, body := s.send(ada, "GET", "/jobs/"+again[1], "", nil); strings.Contains(body, "⊘ cancelled") {
			t.Fatal("an unconfirmed cancel cancelled the job")
		}
		res, _ = s.send(ada, "POST", "/jobs/"+again[1]+"/cancel", url.Values{"csrf_token": {token}, "confirm": {"yes"}}.Encode(), nil)
		if _, body := s.send(ada, "GET", res.Header.Get("Location"), "", nil); !strings.Contains(body, "⊘ cancelled") || !strings.Contains(body, "cancelled by ada") {
			t.Fatalf("page after cancel: %s", body)
		}
	})
}

// Held from its page while it runs, a job's attempt is asked to checkpoint and stop;
// the page says so, and once the attempt ended it shows the job held by who held it,
// with Release. The API holds and releases the same way, and answers 409 for a job in
// a state that does not allow it; a viewer may do neither.
func TestJobPageHoldsARunningJob(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		token := s.csrf(ada, "/jobs/new")
		f := jobForm(token)
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		page := "/jobs/" + m[1]
		node := s.join("gpu-a", "2xA100-80GB")
		s.disp.Tick(ctx)
		start := func() agentapi.AttemptRef {
			t.Helper()
			leases, err := s.disp.Leases(ctx, node, "", 0)
			if err != nil || len(leases.Allocations) != 1 {
				t.Fatalf("leases = %+v, %v", leases, err)
			}
			ref := leases.Allocations[0].AttemptRef
			if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventStarted}); err != nil {
				t.Fatal(err)
			}
			return ref
		}
		ref := start()
		if _, body := s.send(ada, "GET", page, "", nil); !strings.Contains(body, "▶ running") || !strings.Contains(body, ">Hold</button>") {
			t.Fatalf("page of a running job: %s", body)
		}
		res, _ = s.send(ada, "POST", page+"/hold", url.Values{"csrf_token": {token}}.Encode(), nil)
		if !strings.Contains(res.Header.Get("Location"), url.QueryEscape("Holding: the running attempt is asked to checkpoint and stop")) {
			t.Fatalf("hold of a running job → %q", res.Header.Get("Location"))
		}
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 || leases.Allocations[0].Stop == nil || leases.Allocations[0].Stop.Reason != agentapi.StopHold {
			t.Fatalf("lease after the hold = %+v, %v", leases, err)
		}
		if _, body := s.send(ada, "GET", page, "", nil); !strings.Contains(body, "preempting") || !strings.Contains(body, "held by user:ada: attempt 1 checkpoints and stops") ||
			strings.Contains(body, ">Hold</button>") {
			t.Fatalf("page of a job being held: %s", body)
		}
		exit := 0
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit}); err != nil {
			t.Fatal(err)
		}
		s.disp.Tick(ctx)
		if _, body := s.send(ada, "GET", page, "", nil); !strings.Contains(body, "⏸ held") || !strings.Contains(body, ">Release</button>") ||
			!strings.Contains(body, "held by user:ada: attempt 1 stopped; release it to resume from its checkpoint") {
			t.Fatalf("page of a job held while it ran: %s", body)
		}

		// The API, released and held again while it runs; a viewer is refused.
		secret, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "cli", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		api := "/api/v1" + page
		state := func(body string) string {
			t.Helper()
			var j struct{ State string }
			if err := json.Unmarshal([]byte(body), &j); err != nil {
				t.Fatalf("%v in %s", err, body)
			}
			return j.State
		}
		if res, body := s.send(s.browser(), "POST", api+"/hold", "", bearer); res.StatusCode != http.StatusConflict || !strings.Contains(body, `"code":"wrong_state"`) ||
			!strings.Contains(body, "is held; only a queued, scheduled or running job can be held") {
			t.Fatalf("API hold of a held job = %d %s", res.StatusCode, body)
		}
		if res, body := s.send(s.browser(), "POST", api+"/release", "", bearer); res.StatusCode != 200 || state(body) != models.JobQueued {
			t.Fatalf("API release = %d %s", res.StatusCode, body)
		}
		if res, body := s.send(s.browser(), "POST", api+"/release", "", bearer); res.StatusCode != http.StatusConflict || !strings.Contains(body, "only a held job can be released") {
			t.Fatalf("API release of a queued job = %d %s", res.StatusCode, body)
		}
		s.disp.Tick(ctx)
		start()
		if res, body := s.send(s.browser(), "POST", api+"/hold", "", bearer); res.StatusCode != 200 || state(body) != models.JobPreempting {
			t.Fatalf("API hold of a running job = %d %s", res.StatusCode, body)
		}
		s.user("vic", "default", models.RoleViewer)
		view, _, err := s.id.CreateToken(ctx, userByName(t, st, "vic"), "cli", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := s.send(s.browser(), "POST", api+"/release", "", map[string]string{"Authorization": "Bearer " + view}); res.StatusCode != http.StatusForbidden {
			t.Fatalf("API release as a viewer = %d", res.StatusCode)
		}
	})
}

// A failed job's page says why it failed, in the words of the event that failed it,
// and where to look and what to do next; a job that has not failed has no such part.
func TestJobPageSaysWhyItFailed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		f := jobForm(s.csrf(ada, "/jobs/new"))
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		page := "/jobs/" + m[1]
		node := s.join("gpu-a", "2xA100-80GB")
		for attempt := 1; attempt <= 3; attempt++ { // jobForm allows 2 retries
			s.disp.Tick(ctx)
			leases, err := s.disp.Leases(ctx, node, "", 0)
			if err != nil || len(leases.Allocations) != 1 {
				t.Fatalf("attempt %d: leases = %+v, %v", attempt, leases, err)
			}
			ref := leases.Allocations[0].AttemptRef
			if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventStarted}); err != nil {
				t.Fatal(err)
			}
			if _, body := s.send(ada, "GET", page, "", nil); strings.Contains(body, `data-testid="failed"`) {
				t.Fatalf("attempt %d running: the page says why it failed", attempt)
			}
			code := 3
			if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &code}); err != nil {
				t.Fatal(err)
			}
		}
		res, body := s.send(ada, "GET", page, "", nil)
		for _, want := range []string{`data-testid="failed"`, "Why it failed", "<p>Attempt 3 exited with code 3; all 2 retries used.</p>", "Its last output is in the logs below", "Re-run"} {
			if res.StatusCode != 200 || !strings.Contains(body, want) {
				t.Errorf("the page of a failed job (%d) lacks %q", res.StatusCode, want)
			}
		}
	})
}

// A page's log opens on the last 2 MiB of what the attempt wrote, in 2,000 chunks at
// most, saying first how much earlier output it leaves out; a browser that reconnects
// goes on where it stopped, with nothing left out.
func TestJobPageLogOpensOnTheLastOutput(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		f := jobForm(s.csrf(ada, "/jobs/new"))
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		node := s.join("gpu-a", "2xA100-80GB")
		s.disp.Tick(ctx)
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 {
			t.Fatalf("leases = %+v, %v", leases, err)
		}
		ref := leases.Allocations[0].AttemptRef
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventStarted}); err != nil {
			t.Fatal(err)
		}
		write := func(stream string, n, size int, from int64) int64 {
			for i := range n {
				c := models.JobLogChunk{JobID: id, Attempt: 1, Stream: stream, Offset: from, Data: []byte(strings.Repeat(string(rune('a'+i%26)), size-1) + "\n")}
				if err := st.CreateLogChunk(ctx, &c); err != nil {
					t.Fatal(err)
				}
				from += int64(size)
			}
			return from
		}
		stream := func(header map[string]string) (skipped int64, logs []sse) {
			t.Helper()
			_, evs := s.readEvents(ada, "/jobs/"+m[1]+"/logs/stream?stream=stdout", header)
			for _, e := range evs {
				switch e.event {
				case "skipped":
					var d struct{ Bytes int64 }
					if err := json.Unmarshal([]byte(e.data), &d); err != nil || len(logs) > 0 {
						t.Fatalf("skipped event %q after %d logs: %v", e.data, len(logs), err)
					}
					skipped = d.Bytes
				case "log":
					logs = append(logs, e)
				}
			}
			return skipped, logs
		}
		// 3 MiB in 64 KiB chunks: the last 2 MiB are shown, the first 1 MiB is not.
		end := write("stdout", 48, 64<<10, 0)
		exit := 0
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit}); err != nil {
			t.Fatal(err)
		}
		skipped, logs := stream(nil)
		if skipped != 1<<20 || len(logs) != 32 || !strings.Contains(logs[0].data, `"text":"qqqq`) || !strings.Contains(logs[31].data, `"text":"vvvv`) {
			t.Fatalf("the stream of 3 MiB left out %d bytes and sent %d chunks; want 1 MiB out and the last 32 (q…v)", skipped, len(logs))
		}
		if skipped, rest := stream(map[string]string{"Last-Event-ID": logs[30].id}); skipped != 0 || len(rest) != 1 || rest[0].id != logs[31].id {
			t.Errorf("a reconnect after the 31st chunk: %d bytes left out, %d chunks; want the last one only", skipped, len(rest))
		}
		// Many small chunks: at most 2,000 of them.
		write("stdout", 2100, 10, end)
		if skipped, logs := stream(nil); skipped != 3<<20+100*10 || len(logs) != 2000 {
			t.Errorf("the stream of 2,100 more small chunks left out %d bytes and sent %d chunks; want 3 MiB + 1,000 bytes out and 2,000 sent", skipped, len(logs))
		}
	})
}
