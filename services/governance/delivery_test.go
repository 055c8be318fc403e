package governance_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// An unreachable webhook, a receiver answering 500 and an SMTP server refusing the
// address are retried with doubling back-off and reported once given up on; evaluation
// only queues, and a working channel is delivered beside them.
func TestUnreachableChannelsAreRetriedWithBackoffAndReported(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{MaxAttempts: 4, FirstRetry: 30 * time.Second, MaxRetry: 90 * time.Second})
		down, err := e.gov.CreateChannel(e.ctx, governance.ChannelInput{Name: "down", Kind: "webhook", Target: "http://" + closedPort(t) + "/services/T0/B0/hook-secret", Enabled: true})
		must(t, err)
		refused, err := e.gov.CreateChannel(e.ctx, governance.ChannelInput{Name: "refused", Kind: "email", Target: "nobody@refuse.example", Enabled: true})
		must(t, err)
		e.hook.status = http.StatusInternalServerError
		e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "notify",
			Enabled: true, ChannelIDs: []int64{down.ID, refused.ID, e.channels["slack"], e.channels["finops"]}})
		for d := 1; d <= 7; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d))
		}
		e.spend("detect", 30, tue.Add(-time.Hour))
		rep := e.evaluate(tue)
		if len(rep.Raised) != 1 || len(e.hook.received()) != 0 || len(e.mail.Received()) != 0 {
			t.Fatalf("evaluation must only queue: raised %d, hooks %d, mails %d", len(rep.Raised), len(e.hook.received()), len(e.mail.Received()))
		}
		alert := rep.Raised[0].ID

		// Attempt 1 at 12:00: only the e-mail to finops gets through.
		if got := e.deliver(tue); got.Sent != 1 || got.Retrying != 3 {
			t.Fatalf("first round = %+v, want 1 sent and 3 retrying", got)
		}
		e.hook.status = http.StatusOK // the receiver recovers
		// Waits after failures 1, 2, 3: 30 s, 60 s, then 90 s (the cap).
		if got := e.deliver(tue.Add(29 * time.Second)); got.Sent+got.Retrying != 0 {
			t.Errorf("retried before the back-off: %+v", got)
		}
		if got := e.deliver(tue.Add(30 * time.Second)); got.Sent != 1 || got.Retrying != 2 {
			t.Errorf("second round = %+v, want the recovered webhook sent and 2 retrying", got)
		}
		if got := e.deliver(tue.Add(89 * time.Second)); got.Sent+got.Retrying != 0 {
			t.Errorf("third round came early: %+v", got)
		}
		if got := e.deliver(tue.Add(90 * time.Second)); got.Retrying != 2 {
			t.Errorf("third round = %+v", got)
		}
		got := e.deliver(tue.Add(180 * time.Second))
		if got.Retrying != 0 || len(got.Failed) != 2 {
			t.Fatalf("fourth round = %+v, want both given up on", got)
		}
		joined := strings.Join(got.Failed, "\n")
		if !strings.Contains(joined, "gave up after 4 attempts") || !strings.Contains(joined, "connection refused") || !strings.Contains(joined, "RCPT TO nobody@refuse.example") {
			t.Errorf("failures reported as %q", joined)
		}
		// A webhook's path is its secret: failures name the host only.
		if strings.Contains(joined, "hook-secret") || !strings.Contains(joined, "webhook down (http://127.0.0.1:") {
			t.Errorf("failures show the webhook's secret path, or not its host: %q", joined)
		}
		_, deliveries, err := e.gov.AlertByID(e.ctx, alert)
		must(t, err)
		states := map[int64]string{}
		for _, d := range deliveries {
			states[d.ChannelID] = d.State + "/" + string(rune('0'+d.Attempts))
			if strings.Contains(d.LastError, "hook-secret") {
				t.Errorf("delivery %d keeps the webhook's secret path: %q", d.ID, d.LastError)
			}
		}
		want := map[int64]string{down.ID: "failed/4", refused.ID: "failed/4", e.channels["slack"]: "sent/2", e.channels["finops"]: "sent/1"}
		for id, w := range want {
			if states[id] != w {
				t.Errorf("channel %d: %s, want %s", id, states[id], w)
			}
		}
		if got := e.deliver(tue.Add(time.Hour)); got.Sent+got.Retrying+len(got.Failed) != 0 {
			t.Errorf("delivered again after the end: %+v", got)
		}
		if n := len(e.hook.received()); n != 2 {
			t.Errorf("receiver saw %d posts (the 500 and the retry), want 2", n)
		}
	})
}

// A silence mutes later alerts of the rule about the same subject: raised as silenced,
// neither sent nor acted on, until it ends. Acknowledging records who.
func TestSilenceAndAcknowledge(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "hold",
			Enabled: true, ChannelIDs: []int64{e.channels["slack"]}})
		for d := -1; d <= 9; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d))
		}
		e.spend("detect", 30, tue.Add(-time.Hour))
		first := e.evaluate(tue).Raised
		if len(first) != 1 {
			t.Fatalf("raised %+v", first)
		}
		var fe *models.FieldError
		if _, err := e.gov.Silence(e.ctx, first[0].ID, tue.Add(-time.Minute), tue); !errAs(err, &fe, "until") {
			t.Errorf("silence into the past: %v", err)
		}
		if _, err := e.gov.Silence(e.ctx, first[0].ID, tue.AddDate(0, 4, 0), tue); !errAs(err, &fe, "until") {
			t.Errorf("silence of four months: %v", err)
		}
		a, err := e.gov.Silence(e.ctx, first[0].ID, tue.Add(36*time.Hour), tue)
		must(t, err)
		if a.State != "silenced" {
			t.Errorf("state = %s", a.State)
		}
		q := e.job("q", "ada", "detect", models.JobQueued)
		e.spend("detect", 40, tue.Add(23*time.Hour)) // Wednesday: a spike again
		second := e.evaluate(tue.Add(24 * time.Hour)).Raised
		if len(second) != 1 || second[0].State != "silenced" || second[0].SilencedUntil == nil {
			t.Fatalf("during the silence raised %+v, want one silenced alert", second)
		}
		if _, ds, _ := e.gov.AlertByID(e.ctx, second[0].ID); len(ds) != 0 {
			t.Errorf("a silenced alert queued %d notifications", len(ds))
		}
		if st, _ := e.state(q); st != "queued" {
			t.Errorf("a silenced alert acted: the job is %s", st)
		}
		e.spend("detect", 50, tue.Add(47*time.Hour)) // Thursday, after the silence: 250% of 20.00
		third := e.evaluate(tue.Add(48 * time.Hour)).Raised
		if len(third) != 1 || third[0].State != "firing" {
			t.Fatalf("after the silence raised %+v", third)
		}
		if st, _ := e.state(q); st != "held" {
			t.Errorf("after the silence the job is %s, want held", st)
		}
		acked, err := e.gov.Acknowledge(e.ctx, third[0].ID, e.users["ada"].ID, tue.Add(49*time.Hour))
		must(t, err)
		if acked.State != "acknowledged" || acked.AckedByID == nil || *acked.AckedByID != e.users["ada"].ID || !acked.AckedAt.Equal(tue.Add(49*time.Hour)) {
			t.Errorf("acknowledged = %+v", acked)
		}
		if r, err := e.gov.Resolve(e.ctx, third[0].ID, tue.Add(50*time.Hour)); err != nil || r.State != "resolved" {
			t.Errorf("resolve = %+v, %v", r, err)
		}
		if _, err := e.gov.Acknowledge(e.ctx, third[0].ID, e.users["ada"].ID, tue.Add(51*time.Hour)); !errAs(err, &fe, "alert") {
			t.Errorf("acknowledging a resolved alert: %v", err)
		}
	})
}

// A receiver that never answers costs one SendTimeout per attempt, and the attempt is
// retried like any failure.
func TestHangingWebhookTimesOut(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{SendTimeout: 200 * time.Millisecond})
		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer hang.Close()
		defer close(release)
		ch, err := e.gov.CreateChannel(e.ctx, governance.ChannelInput{Name: "hang", Kind: "webhook", Target: hang.URL, Enabled: true})
		must(t, err)
		e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "notify",
			Enabled: true, ChannelIDs: []int64{ch.ID}})
		for d := 1; d <= 7; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d))
		}
		e.spend("detect", 30, tue.Add(-time.Hour))
		raised := e.evaluate(tue).Raised
		if len(raised) != 1 {
			t.Fatalf("raised %+v", raised)
		}
		if got := e.deliver(tue); got.Retrying != 1 {
			t.Fatalf("deliver = %+v, want the attempt timed out and retrying", got)
		}
		_, ds, err := e.gov.AlertByID(e.ctx, raised[0].ID)
		must(t, err)
		if len(ds) != 1 || !strings.Contains(ds[0].LastError, "deadline exceeded") || !ds[0].NextAttemptAt.Equal(tue.Add(30*time.Second)) {
			t.Errorf("delivery = %+v", ds)
		}
	})
}

// The loop of the leader evaluates and delivers every round: an alert goes out once to
// each channel, however many rounds follow.
func TestRunRaisesAndSendsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "notify",
			Enabled: true, ChannelIDs: []int64{e.channels["slack"], e.channels["finops"]}})
		for d := 1; d <= 7; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d))
		}
		e.spend("detect", 30, tue.Add(-time.Hour))
		var mu sync.Mutex
		rounds := 0
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			rounds++
			return tue
		}
		ctx, cancel := context.WithCancel(e.ctx)
		stopped := make(chan struct{})
		go func() { defer close(stopped); e.gov.Run(ctx, clock, time.Millisecond) }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			n := rounds
			mu.Unlock()
			if n >= 20 { // ten rounds: an evaluation and a delivery each
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d clock reads in 10 s", n)
			}
		}
		cancel()
		<-stopped
		hooks, mails := e.hook.received(), e.mail.Received()
		if len(hooks) != 1 || len(mails) != 1 {
			t.Fatalf("after ten rounds: %d webhook posts and %d e-mails, want one each", len(hooks), len(mails))
		}
		alert := hooks[0]["alert"].(map[string]any)
		if alert["rule"] != "team-cost-spike" || alert["scope"] != "team" || !strings.HasPrefix(alert["url"].(string), "https://gantry.example/alerts/") {
			t.Errorf("webhook alert = %v", alert)
		}
		alerts, err := e.gov.Alerts(e.ctx, store.AlertFilter{})
		must(t, err)
		events, err := s.AuditEventsAfter(e.ctx, store.AuditFilter{Action: "alert.raised"}, 0, 10)
		must(t, err)
		if len(alerts) != 1 || len(events) != 1 || events[0].Actor != "system" {
			t.Errorf("%d alerts and %d alert.raised events (%+v), want one each, by system", len(alerts), len(events), events)
		}
	})
}
