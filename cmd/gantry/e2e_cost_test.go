package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtpd "github.com/emersion/go-smtp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// A running `gantry serve` meters the job its agent ran into the ledger, to the
// micro-unit, and its budget rule fires: the alert is posted to a real webhook
// receiver and e-mailed through a real SMTP server that wants a password, which
// comes from the environment and shows in no log. An answer to feedback whose e-mail
// another process queued in the database (a replica, or a server before a restart) is
// e-mailed by serve's leader.
func TestServeMetersJobsAndFiresRules(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := gantry(t, nil, "migrate", "--data-dir", dir); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	ctx := context.Background()
	hook := newHookSink(t)
	mail := newAuthMailServer(t, "gantry", "s3cret-pass")
	teamID := configureCost(t, ctx, dir, hook.srv.URL)

	url, stop := serve(t, []string{smtpPasswordEnv + "=s3cret-pass"}, "--data-dir", dir, "--bcrypt-cost", "4",
		"--heartbeat-interval", "300ms", "--node-timeout", "5s", "--local-agent-gpus", "1xA100-80GB",
		"--meter-every", "200ms", "--rules-every", "200ms", "--public-url", "http://gantry.test",
		"--smtp-host", "127.0.0.1", "--smtp-port", mail.port, "--smtp-from", "Gantry <gantry@example.com>", "--smtp-user", "gantry")
	a := api{t: t, url: url, token: apiToken(t, dir)}
	feedbackID := answerFeedback(t, ctx, dir)
	body, _ := json.Marshal(map[string]any{"project": "detect", "name": "metered", "command": []string{"/bin/sh", "-c", "sleep 3"},
		"resources": map[string]int{"gpus": 1}})
	status, out := a.do(http.MethodPost, "/api/v1/jobs", string(body))
	var j apiJob
	if status != http.StatusCreated || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("submit = %d %s", status, out)
	}
	a.wait(j.ID, "succeeded")

	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	al, err := st.AllocationByAttempt(ctx, j.ID, 1, 0)
	if err != nil || al.StartedAt == nil || al.EndedAt == nil {
		t.Fatalf("allocation = %+v, %v", al, err)
	}
	secs := int64(al.EndedAt.Truncate(time.Second).Sub(al.StartedAt.Truncate(time.Second)) / time.Second)
	want := 100_000 * secs // 360.00 a GPU-hour is 0.10 a GPU-second
	var charged int64
	for deadline := time.Now().Add(20 * time.Second); charged != want; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the ledger charges job %d %d micros, want %d (%d s of one GPU)", j.ID, charged, want, secs)
		}
		rows, err := st.CostRollup(ctx, store.RollupQuery{By: store.ByTeam, From: al.StartedAt.Truncate(24 * time.Hour),
			To: al.EndedAt.Truncate(24*time.Hour).AddDate(0, 0, 1), JobIDs: []int64{j.ID}, Resources: []string{models.ResourceGPU}})
		if err != nil {
			t.Fatal(err)
		}
		charged = 0
		for _, r := range rows {
			if r.Key != teamID {
				t.Fatalf("job charged to team %d, want %d", r.Key, teamID)
			}
			charged += r.AmountMicros
		}
	}

	// The job spent 100% of the team's 0.20 budget: the budget rule notifies both channels.
	var alert map[string]any
	for deadline := time.Now().Add(20 * time.Second); alert == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no budget alert at the webhook; it received %v", hook.received())
		}
		for _, b := range hook.received() {
			if a, _ := b["alert"].(map[string]any); a["rule"] == "budget-threshold" {
				if ev, _ := a["evidence"].(map[string]any); ev["threshold_pct"] == float64(100) {
					alert = a
				}
			}
		}
	}
	ev := alert["evidence"].(map[string]any)
	id := int64(alert["id"].(float64))
	if ev["spent_micros"] != float64(want) || ev["budget_micros"] != float64(200_000) || alert["url"] != fmt.Sprintf("http://gantry.test/alerts/%d", id) {
		t.Errorf("alert = %v; want %d micros spent of 200000, linked to the portal", alert, want)
	}
	var msg authMail
	for deadline := time.Now().Add(20 * time.Second); msg.to == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no alert e-mail arrived")
		}
		for _, m := range mail.received() {
			if strings.Contains(m.data, fmt.Sprintf("X-Gantry-Alert: %d", id)) {
				msg = m
			}
		}
	}
	if msg.user != "gantry" || msg.to != "finops@example.com" || !strings.Contains(msg.data, "Subject: [Gantry] budget-threshold: team vision has spent") ||
		!strings.Contains(msg.data, fmt.Sprintf("http://gantry.test/alerts/%d", id)) {
		t.Errorf("e-mail as %q to %q:\n%s", msg.user, msg.to, msg.data)
	}
	var answer authMail
	for deadline := time.Now().Add(20 * time.Second); answer.to == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queued feedback e-mail never arrived; the mail server got %+v", mail.received())
		}
		for _, m := range mail.received() {
			if m.to == "ada@example.com" {
				answer = m
			}
		}
	}
	if answer.user != "gantry" || !strings.Contains(answer.data, "Subject: [Gantry] Your feedback \"More A100s\" is now planned") ||
		!strings.Contains(answer.data, fmt.Sprintf("Two nodes in January.\r\n\r\nTo stop e-mails like this one: http://gantry.test/account\r\n\r\nhttp://gantry.test/feedback/%d\r\n", feedbackID)) {
		t.Errorf("feedback e-mail as %q:\n%s", answer.user, answer.data)
	}
	if _, logs := stop(); strings.Contains(logs, "s3cret-pass") {
		t.Errorf("the SMTP password shows in serve's output:\n%s", logs)
	}
}

// configureCost sets up, before serve starts, what a cost admin would: team vision with
// project detect, 360.00 a GPU-hour, a 0.20 monthly budget with thresholds 50% and 100%,
// and the budget rule notifying a webhook and an e-mail address. It returns the team's id.
func configureCost(t *testing.T, ctx context.Context, dir, hookURL string) int64 {
	t.Helper()
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx = audit.WithActor(ctx, audit.System())
	team := &models.Team{Name: "vision"}
	must(t, st.CreateTeam(ctx, team))
	must(t, st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "detect"}))
	al := audit.New(st, time.Now)
	acc, err := accounting.New(st, al, accounting.Config{})
	must(t, err)
	_, err = acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceGPU, RateMicros: 360_000_000, EffectiveFrom: time.Now().AddDate(0, 0, -1)})
	must(t, err)
	_, err = acc.CreateBudget(ctx, accounting.BudgetInput{TeamID: &team.ID, AmountMicros: 200_000, Thresholds: []int{50, 100}})
	must(t, err)
	tel, err := telemetry.New(st, telemetry.Config{})
	must(t, err)
	gov, err := governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, governance.Config{})
	must(t, err)
	hook, err := gov.CreateChannel(ctx, governance.ChannelInput{Name: "chat", Kind: governance.ChannelWebhook, Target: hookURL, Enabled: true})
	must(t, err)
	finops, err := gov.CreateChannel(ctx, governance.ChannelInput{Name: "finops", Kind: governance.ChannelEmail, Target: "finops@example.com", Enabled: true})
	must(t, err)
	rules, err := gov.Rules(ctx)
	must(t, err)
	for _, r := range rules {
		if r.Name == "budget-threshold" {
			_, err := gov.UpdateRule(ctx, r.ID, governance.RuleInput{Name: r.Name, Metric: r.Metric, Action: r.Action, Enabled: true,
				ChannelIDs: []int64{hook.ID, finops.ID}})
			must(t, err)
		}
	}
	return team.ID
}

// answerFeedback files a feedback item by ada and answers it as another replica of the
// server would, with e-mail set up: the answer's e-mail is queued, not sent. It returns
// the item's id.
func answerFeedback(t *testing.T, ctx context.Context, dir string) int64 {
	t.Helper()
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	must(t, err)
	defer st.Close()
	ctx = audit.WithActor(ctx, audit.System())
	ada := &models.User{Username: "ada", Email: "ada@example.com"}
	must(t, st.CreateUser(ctx, ada))
	al := audit.New(st, time.Now)
	acc, err := accounting.New(st, al, accounting.Config{})
	must(t, err)
	tel, err := telemetry.New(st, telemetry.Config{})
	must(t, err)
	gov, err := governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Mailer: governance.SMTPSender{Addr: "127.0.0.1:1", From: "gantry@example.com"}}, governance.Config{})
	must(t, err)
	fb := feedback.New(st, al, gov, time.Now)
	it, err := fb.Submit(ctx, ada.ID, feedback.Input{Category: "capacity", Title: "More A100s"})
	must(t, err)
	_, err = fb.Answer(ctx, it.ID, ada.ID, models.FeedbackPlanned, "Two nodes in January.")
	must(t, err)
	return it.ID
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hookSink is a real HTTP receiver that keeps the JSON posted to it.
type hookSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "want JSON", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookSink) received() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.bodies...)
}

// authMailServer is a real SMTP server on loopback that takes mail only from a
// client that authenticated with its user and password.
type authMailServer struct {
	port           string
	user, password string
	mu             sync.Mutex
	msgs           []authMail
}

type authMail struct{ user, to, data string }

func newAuthMailServer(t *testing.T, user, password string) *authMailServer {
	m := &authMailServer{user: user, password: password}
	srv := smtpd.NewServer(m)
	srv.Domain, srv.AllowInsecureAuth = "localhost", true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, m.port, _ = net.SplitHostPort(l.Addr().String())
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return m
}

func (m *authMailServer) NewSession(*smtpd.Conn) (smtpd.Session, error) {
	return &authMailSession{m: m}, nil
}

func (m *authMailServer) received() []authMail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]authMail(nil), m.msgs...)
}

type authMailSession struct {
	m   *authMailServer
	cur authMail
}

func (s *authMailSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *authMailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != s.m.user || password != s.m.password {
			return &smtpd.SMTPError{Code: 535, EnhancedCode: smtpd.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.cur.user = user
		return nil
	}), nil
}
func (s *authMailSession) Reset()        { s.cur = authMail{user: s.cur.user} }
func (s *authMailSession) Logout() error { return nil }
func (s *authMailSession) Mail(string, *smtpd.MailOptions) error {
	if s.cur.user == "" {
		return &smtpd.SMTPError{Code: 530, EnhancedCode: smtpd.EnhancedCode{5, 7, 0}, Message: "authenticate first"}
	}
	return nil
}
func (s *authMailSession) Rcpt(to string, _ *smtpd.RcptOptions) error {
	s.cur.to = to
	return nil
}
func (s *authMailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = string(b)
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.msgs = append(s.m.msgs, s.cur)
	return nil
}
