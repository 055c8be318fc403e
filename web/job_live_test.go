package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// shownVersion is the version a live part says it shows, in its hx-vals.
var shownVersion = regexp.MustCompile(`hx-vals="([^"]*)"`)

// The live part of a job's page, as its refresh asks for it: the part alone, with the
// actions the user may take in the job's state; 204 while it still shows what the job
// looks like; a change of state announced to the rest of the page; the refresh ends
// with the job. A viewer's part has no actions whatever version it names; an outsider
// gets nothing.
func TestJobPageLivePart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		vic := s.user("vic", "default", models.RoleViewer)
		olga, _ := s.member("olga")
		f := jobForm(s.csrf(ada, "/jobs/new"))
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		page := "/jobs/" + m[1]
		htmx := map[string]string{"HX-Request": "true"}

		// live asks for the live part as its refresh does, showing version shown.
		live := func(c *http.Client, shown string) (*http.Response, string, string) {
			t.Helper()
			path := page
			if shown != "" {
				path += "?shown=" + shown
			}
			res, body := s.send(c, "GET", path, "", htmx)
			if res.StatusCode != http.StatusOK {
				return res, body, ""
			}
			if !strings.HasPrefix(body, `<div id="job-live"`) || strings.Contains(body, "<html") || strings.Contains(body, "data-log-url") {
				t.Fatalf("GET %s as htmx = %s; want the live part alone", path, body)
			}
			if res.Header.Get("Vary") != "HX-Request" {
				t.Error("the page and its live part share a URL without Vary: HX-Request")
			}
			v := shownVersion.FindStringSubmatch(body)
			if v == nil {
				return res, body, ""
			}
			var vals struct{ Shown string }
			if err := json.Unmarshal([]byte(html.UnescapeString(v[1])), &vals); err != nil || vals.Shown == "" {
				t.Fatalf("hx-vals %q: %v", v[1], err)
			}
			return res, body, vals.Shown
		}
		has := func(who, body string, want []string, not []string) {
			t.Helper()
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("%s: the live part lacks %q", who, w)
				}
			}
			for _, n := range not {
				if strings.Contains(body, n) {
					t.Errorf("%s: the live part has %q", who, n)
				}
			}
		}

		res, body, queued := live(ada, "")
		has("queued, ada", body, []string{"◷ queued", "Why is this pending?", `id="hold-job"`, `id="cancel-job"`, `id="rerun-job"`, `id="clone-job"`, `hx-trigger="every 2s"`},
			[]string{`id="release-job"`})
		if !strings.HasPrefix(queued, "queued.") || res.Header.Get("HX-Trigger") != "" || strings.Contains(body, "job-state-said") {
			t.Fatalf("queued part: version %q, HX-Trigger %q", queued, res.Header.Get("HX-Trigger"))
		}
		if res, body := s.send(ada, "GET", page+"?shown="+queued, "", htmx); res.StatusCode != http.StatusNoContent || body != "" {
			t.Fatalf("refresh of an unchanged part = %d %q; want 204", res.StatusCode, body)
		}
		// The page itself carries the same part, which refreshes with the same version.
		if _, full := s.send(ada, "GET", page, "", nil); !strings.Contains(full, "<html") || !strings.Contains(full, html.EscapeString(`{"shown":"`+queued+`"}`)) ||
			!strings.Contains(full, `<p id="job-state-said" class="visually-hidden" role="status"></p>`) {
			t.Fatalf("the page does not carry version %s: %s", queued, full)
		}
		// A viewer's part has no actions, even named by the member's version.
		_, body, vicQueued := live(vic, queued)
		has("queued, viewer", body, []string{"◷ queued", "Why is this pending?", `data-testid="actions"`}, []string{"<form", "<button", ">Clone<", "csrf_token"})
		if vicQueued == queued {
			t.Error("a viewer's part has the member's version")
		}
		if res, _, _ := live(olga, queued); res.StatusCode != http.StatusForbidden {
			t.Fatalf("live part for an outsider = %d", res.StatusCode)
		}

		// Held, then released from elsewhere: the part follows with the actions of each state.
		token := s.csrf(ada, page)
		if res, _ := s.send(ada, "POST", page+"/hold", "csrf_token="+token, nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("hold = %d", res.StatusCode)
		}
		res, body, held := live(ada, queued)
		has("held", body, []string{"⏸ held", `id="release-job"`, `id="cancel-job"`, `<p id="job-state-said" hx-swap-oob="innerHTML">Job train-1: held.</p>`},
			[]string{`id="hold-job"`})
		if res.Header.Get("HX-Trigger") != `{"job-state":"held"}` || !strings.HasPrefix(held, "held.") {
			t.Fatalf("held part: HX-Trigger %q, version %q", res.Header.Get("HX-Trigger"), held)
		}
		s.send(ada, "POST", page+"/release", "csrf_token="+token, nil)

		// It starts on a node: running, placed, no longer pending; Cancel stays.
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
		res, body, running := live(ada, held)
		has("running", body, []string{"Job train-1: running.", "▶ running", "gpu-a", "GPU 0 · A100-80GB", `id="cancel-job"`, `id="hold-job"`, `hx-trigger="every 2s"`},
			[]string{"Why is this pending?", "Not placed yet"})
		if res.Header.Get("HX-Trigger") != `{"job-state":"running"}` || !strings.HasPrefix(running, "running.") {
			t.Fatalf("running part: HX-Trigger %q, version %q", res.Header.Get("HX-Trigger"), running)
		}

		// Its log stream, which told the page to wait while it queued, says it follows now
		// although the job wrote nothing yet.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL+page+"/logs/stream", nil)
		stream, err := ada.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		first, err := bufio.NewReader(stream.Body).ReadString('}')
		stream.Body.Close()
		if err != nil || first != "event: following\ndata: {\"attempt\":1}" {
			t.Fatalf("the stream of a quiet running job starts with %q (%v)", first, err)
		}

		// It ends: Cancel and Hold go, Re-run stays, and the part stops refreshing.
		exit := 0
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit}); err != nil {
			t.Fatal(err)
		}
		res, body, _ = live(ada, running)
		has("succeeded", body, []string{"✓ succeeded", "exit code 0", `id="rerun-job"`, `id="clone-job"`}, []string{`id="cancel-job"`, `id="hold-job"`, "hx-trigger", "hx-vals"})
		if res.Header.Get("HX-Trigger") != `{"job-state":"succeeded"}` {
			t.Fatalf("succeeded part: HX-Trigger %q", res.Header.Get("HX-Trigger"))
		}
		_, body, _ = live(vic, vicQueued)
		has("succeeded, viewer", body, []string{"✓ succeeded"}, []string{"<form", "<button", ">Clone<"})
	})
}

// The notice of a job just submitted is part of the live part, so it follows the job:
// "is queued" on the page the submit opens, "has ended" once it has, in the refresh
// that carries it (submitted=1), never on a page opened otherwise.
func TestJobPageSubmittedNotice(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ada := s.user("ada", "default", models.RoleMember)
		res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		page := "/jobs/" + m[1]
		queued := "Job " + m[1] + " (train-1) is queued. This page follows it live."
		_, body := s.send(ada, "GET", res.Header.Get("Location"), "", nil)
		v := shownVersion.FindStringSubmatch(body)
		if !strings.Contains(body, queued) || v == nil {
			t.Fatalf("the page a submit opens lacks %q or its refresh: %.2000s", queued, body)
		}
		var vals struct{ Shown, Submitted string }
		if err := json.Unmarshal([]byte(html.UnescapeString(v[1])), &vals); err != nil || vals.Submitted != "1" {
			t.Fatalf("hx-vals %q (%v): the refresh does not carry submitted=1", v[1], err)
		}
		if _, plain := s.send(ada, "GET", page, "", nil); strings.Contains(plain, `data-testid="notice"`) {
			t.Error("a job's page opened otherwise than by submitting says it was submitted")
		}

		if res, _ := s.send(ada, "POST", page+"/cancel", "confirm=yes&csrf_token="+s.csrf(ada, page), nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("cancel = %d", res.StatusCode)
		}
		htmx := map[string]string{"HX-Request": "true"}
		res, body = s.send(ada, "GET", page+"?shown="+vals.Shown+"&submitted=1", "", htmx)
		ended := "Job " + m[1] + " (train-1) has ended: cancelled."
		if res.StatusCode != http.StatusOK || !strings.Contains(body, ended) || strings.Contains(body, "follows it live") {
			t.Errorf("the refresh of the submitted page after cancel = %d, want %q in: %.2000s", res.StatusCode, ended, body)
		}
		if _, body := s.send(ada, "GET", page+"?shown="+vals.Shown, "", htmx); strings.Contains(body, `data-testid="notice"`) {
			t.Error("a refresh without submitted=1 says the job was submitted")
		}
	})
}

// The refresh of a job's live part learns cheaply whether the part changed: each thing
// the part shows, changed alone, makes the next refresh draw it (200, with the change),
// and the one after is 204 again; the run time of a running job, which the page counts
// on itself, does not.
func TestJobPageLivePartRedrawsOnEachChange(t *testing.T) {
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
		page := "/jobs/" + m[1]
		htmx := map[string]string{"HX-Request": "true"}
		_, body := s.send(ada, "GET", page, "", htmx)
		shown := liveVersionOf(t, body)
		unchanged := func(after string) {
			t.Helper()
			if res, body := s.send(ada, "GET", page+"?shown="+shown, "", htmx); res.StatusCode != http.StatusNoContent {
				t.Fatalf("after %s, an unchanged part's refresh = %d; want 204: %.300s", after, res.StatusCode, body)
			}
		}
		// changed makes a change and checks that the next refresh draws it, with want.
		changed := func(what string, change func() error, want string) {
			t.Helper()
			if err := change(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			res, body := s.send(ada, "GET", page+"?shown="+shown, "", htmx)
			if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("after %s, the refresh = %d; want 200 with %q: %.3000s", what, res.StatusCode, want, body)
			}
			shown = liveVersionOf(t, body)
			unchanged(what)
		}
		unchanged("nothing")

		changed("a pending reason", func() error { return st.SetPendingReason(ctx, id, "every A100-80GB is taken") }, "every A100-80GB is taken.")
		node := s.join("gpu-a", "2xA100-80GB")
		changed("a placement", func() error { s.disp.Tick(ctx); return nil }, "GPU 0 · A100-80GB")
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 {
			t.Fatalf("leases = %+v, %v", leases, err)
		}
		changed("the start", func() error {
			return s.disp.Report(ctx, node, agentapi.Report{AttemptRef: leases.Allocations[0].AttemptRef, Event: agentapi.EventStarted})
		}, "▶ running")
		// A second on, Ran is another figure, which the page counts itself.
		time.Sleep(1100 * time.Millisecond)
		unchanged("a second of running")

		changed("an event alone", func() error {
			return st.NoteJob(ctx, id, models.JobRunning, "slurm", "Slurm moved it to node c12", "system")
		}, "Slurm moved it to node c12")
		a, err := st.AllocationByAttempt(ctx, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		changed("an allocation alone", func() error {
			why := "asked to checkpoint"
			return st.UpdateAllocation(ctx, a.ID, []string{models.AllocRunning}, store.AllocationChange{State: models.AllocStopping, StopReason: &why})
		}, "asked to checkpoint")
		job, err := st.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().UTC().Truncate(time.Minute)
		changed("a charge", func() error {
			return st.AppendLedgerEntries(ctx, []models.LedgerEntry{{JobID: &id, Attempt: 1, AllocationID: &a.ID, UserID: &job.UserID, ProjectID: &job.ProjectID,
				Resource: "gpu", QuantityMilli: 1000, RateMicros: 7_250_000, AmountMicros: 7_250_000, PeriodStart: start, PeriodEnd: start.Add(time.Minute)}})
		}, accounting.FormatMoney(7_250_000))
		changed("the metering watermark", func() error {
			return st.InTx(ctx, func(tx *store.Store) error {
				if _, _, err := tx.LockMetering(ctx); err != nil {
					return err
				}
				return tx.SetMeteredUntil(ctx, start.Add(time.Minute))
			})
		}, "metered up to "+start.Add(time.Minute).Format("2006-01-02 15:04:05 UTC"))
		changed("a placement policy", func() error {
			_, err := directory.New(st, s.audit, s.az, nil, time.Now).SetPlacement(ctx, "default", directory.Placement{ConfidentialOnly: true})
			return err
		}, "confidential-computing nodes only")
	})
}

// liveVersionOf is the version a live part says it shows.
func liveVersionOf(t *testing.T, body string) string {
	t.Helper()
	v := shownVersion.FindStringSubmatch(body)
	if v == nil {
		t.Fatalf("the live part names no version: %.300s", body)
	}
	var vals struct{ Shown string }
	if err := json.Unmarshal([]byte(html.UnescapeString(v[1])), &vals); err != nil || vals.Shown == "" {
		t.Fatalf("hx-vals %q: %v", v[1], err)
	}
	return vals.Shown
}

// A job cancelled while it runs has ended, but its attempt has not until its node
// stopped it: the page's live part goes on refreshing while an attempt is stopping, so
// that "Where it runs" comes to say it ended (and when) without a reload, and stops once
// every attempt has.
func TestJobPageFollowsAStoppingAttempt(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ctx := context.Background()
	ada := s.user("ada", "default", models.RoleMember)
	res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
	m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("submit = %d", res.StatusCode)
	}
	page := "/jobs/" + m[1]
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
	if res, _ := s.send(ada, "POST", page+"/cancel", "confirm=yes&csrf_token="+s.csrf(ada, page), nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel = %d", res.StatusCode)
	}
	_, body := s.send(ada, "GET", page, "", nil)
	if !strings.Contains(body, "⊘ cancelled") || !strings.Contains(body, "stopping") {
		t.Fatalf("the page of a job cancelled while it ran: %s", body[strings.Index(body, `<div id="job-live"`):])
	}
	if !strings.Contains(body, `hx-trigger="every 2s"`) {
		t.Error("the live part stopped refreshing while the cancelled job's attempt is still stopping")
	}
	// Its quarter of a GPU is said as the form asked for it, not in milli-GPU.
	if !strings.Contains(body, "GPU 0 · A100-80GB · 0.25 of it") || strings.Contains(body, "milli") {
		t.Errorf("where the job ran does not say its share as 0.25: %s", body[strings.Index(body, `data-testid="allocations"`):])
	}
	// So do its timeline and the cluster page.
	if !strings.Contains(body, " (0.25 of it)</div>") || strings.Contains(body, "/1000") {
		t.Errorf("the timeline does not say the share as 0.25: %s", body[strings.Index(body, `data-testid="timeline"`):])
	}
	if _, cluster := s.send(ada, "GET", "/cluster", "", nil); !strings.Contains(cluster, "0.25 of it in use") || strings.Contains(cluster, "/1000") {
		t.Errorf("the cluster page does not say the share as 0.25: %s", cluster)
	}
	// Its process is stopped by SIGTERM, which a process node reports as exit -1.
	exit := -1
	if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit, Signal: "SIGTERM"}); err != nil {
		t.Fatal(err)
	}
	_, body = s.send(ada, "GET", page, "", map[string]string{"HX-Request": "true"})
	if strings.Contains(body, "stopping") || !strings.Contains(body, "ended") || strings.Contains(body, "hx-trigger") {
		t.Errorf("once the attempt ended the live part says: %s", body)
	}
	if !strings.Contains(body, `<div class="meta">stopped by a signal, as asked</div>`) || strings.Contains(body, "exit -1") {
		t.Errorf("the attempt stopped by the cancel is not said to be stopped: %s", body[strings.Index(body, `data-testid="allocations"`):])
	}
}
