package governance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/governance/mailtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// env is an organisation with teams vision (project detect, user ada) and audio (project
// speech, user bob), egress at 1.00 a GiB (so spend is set to the cent), a real webhook
// receiver and a real SMTP server on loopback, and a stopper that behaves as dispatch does.
type env struct {
	t        *testing.T
	ctx      context.Context
	s        *store.Store
	acc      *accounting.Accounting
	tel      *telemetry.Service
	gov      *governance.Service
	audit    *audit.Log
	stopper  *stopper
	hook     *hookReceiver
	mail     *mailtest.Server
	users    map[string]*models.User
	teams    map[string]*models.Team
	projects map[string]*models.Project
	node     *models.Node
	channels map[string]int64
}

func newEnv(t *testing.T, s *store.Store, cfg governance.Config) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, s: s, users: map[string]*models.User{}, teams: map[string]*models.Team{},
		projects: map[string]*models.Project{}, channels: map[string]int64{}}
	var err error
	if e.acc, err = accounting.New(s, audit.New(s, time.Now), accounting.Config{}); err != nil {
		t.Fatal(err)
	}
	if e.tel, err = telemetry.New(s, telemetry.Config{}); err != nil {
		t.Fatal(err)
	}
	e.audit = audit.New(s, func() time.Time { return time.Now() })
	e.stopper = &stopper{s: s}
	e.hook = newHookReceiver(t)
	e.mail = mailtest.New(t)
	if cfg.PortalURL == "" {
		cfg.PortalURL = "https://gantry.example"
	}
	e.gov, err = governance.New(governance.Deps{Store: s, Accounting: e.acc, Audit: e.audit, Idle: e.tel, Stopper: e.stopper,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Senders: map[string]governance.Sender{
			governance.ChannelWebhook: governance.WebhookSender{Client: &http.Client{}},
			governance.ChannelEmail:   governance.SMTPSender{Addr: e.mail.Addr, From: "Gantry <gantry@example.com>"},
		},
		Mailer: governance.SMTPSender{Addr: e.mail.Addr, From: "Gantry <gantry@example.com>"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct{ user, team, project string }{{"ada", "vision", "detect"}, {"bob", "audio", "speech"}} {
		u := &models.User{Username: o.user}
		must(t, s.CreateUser(ctx, u))
		tm := &models.Team{Name: o.team}
		must(t, s.CreateTeam(ctx, tm))
		p := &models.Project{TeamID: tm.ID, Name: o.project}
		must(t, s.CreateProject(ctx, p))
		e.users[o.user], e.teams[o.team], e.projects[o.project] = u, tm, p
	}
	_, err = e.acc.CreateRate(ctx, models.CostRate{Resource: models.ResourceEgress, RateMicros: 1_000_000, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	must(t, err)
	e.node = &models.Node{Name: "n1", State: models.NodeReady}
	must(t, s.CreateNode(ctx, e.node, []models.GPUDevice{{Index: 0, UUID: "g0", Model: "A100-80GB"}, {Index: 1, UUID: "g1", Model: "A100-80GB"}}))
	hook, err := e.gov.CreateChannel(ctx, governance.ChannelInput{Name: "slack", Kind: "webhook", Target: e.hook.srv.URL + "/hook", Enabled: true})
	must(t, err)
	mail, err := e.gov.CreateChannel(ctx, governance.ChannelInput{Name: "finops", Kind: "email", Target: "FinOps <finops@example.com>", Enabled: true})
	must(t, err)
	e.channels["slack"], e.channels["finops"] = hook.ID, mail.ID
	return e
}

// spend charges project amount (whole currency units) of egress in the hour from at.
func (e *env) spend(project string, units int64, at time.Time) {
	e.t.Helper()
	_, err := e.acc.RecordUsage(e.ctx, accounting.Usage{Resource: models.ResourceEgress, ProjectID: e.projects[project].ID,
		Bytes: units << 30, From: at, To: at.Add(time.Hour)})
	must(e.t, err)
}

// rule rewrites the default rule called name (or adds it) with in's settings.
func (e *env) rule(in governance.RuleInput) *models.AlertRule {
	e.t.Helper()
	rules, err := e.gov.Rules(e.ctx)
	must(e.t, err)
	for _, r := range rules {
		if r.Name == in.Name {
			got, err := e.gov.UpdateRule(e.ctx, r.ID, in)
			must(e.t, err)
			return got
		}
	}
	got, err := e.gov.CreateRule(e.ctx, in)
	must(e.t, err)
	return got
}

// disable turns the rule called name off, leaving the rest of it as it is.
func (e *env) disable(name string) {
	e.t.Helper()
	rules, err := e.gov.Rules(e.ctx)
	must(e.t, err)
	for _, r := range rules {
		if r.Name == name {
			_, err := e.gov.UpdateRule(e.ctx, r.ID, governance.RuleInput{Name: r.Name, Metric: r.Metric, Threshold: r.Threshold,
				WindowSec: r.WindowSec, Action: r.Action, DryRun: r.DryRun, Enabled: false})
			must(e.t, err)
			return
		}
	}
	e.t.Fatalf("no rule %s", name)
}

// job submits a job and moves it to state.
func (e *env) job(name, user, project, state string) *models.Job {
	e.t.Helper()
	j := &models.Job{Name: name, ProjectID: e.projects[project].ID, UserID: e.users[user].ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
	must(e.t, e.s.CreateJob(e.ctx, j, "test"))
	path := map[string][]string{models.JobQueued: nil, models.JobRunning: {models.JobScheduled, models.JobRunning}}[state]
	from := models.JobQueued
	for _, to := range path {
		must(e.t, e.s.TransitionJob(e.ctx, j.ID, store.Transition{From: from, To: to, Reason: "test"}))
		from = to
	}
	got, err := e.s.JobByID(e.ctx, j.ID)
	must(e.t, err)
	return got
}

func (e *env) evaluate(now time.Time) governance.EvalReport {
	e.t.Helper()
	rep, err := e.gov.Evaluate(e.ctx, now)
	must(e.t, err)
	if len(rep.Problems) > 0 {
		e.t.Errorf("evaluation problems: %v", rep.Problems)
	}
	return rep
}

func (e *env) deliver(now time.Time) governance.DeliveryReport {
	e.t.Helper()
	rep, err := e.gov.Deliver(e.ctx, now)
	must(e.t, err)
	return rep
}

func evidence(t *testing.T, a models.Alert) map[string]any {
	t.Helper()
	var ev map[string]any
	must(t, json.Unmarshal([]byte(a.Evidence), &ev))
	return ev
}

// hookReceiver is a real HTTP server that records the JSON posted to it.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	status int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{status: http.StatusOK}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "want JSON", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.bodies = append(h.bodies, body)
		w.WriteHeader(h.status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) received() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.bodies...)
}

// stopper does what dispatch does on a governance stop: the job goes to preempting, its
// agent checkpoints and stops it, and it is held instead of requeued.
type stopper struct {
	s     *store.Store
	mu    sync.Mutex
	calls []string
}

func (st *stopper) CheckpointAndStop(ctx context.Context, jobID int64, reason string) error {
	st.mu.Lock()
	st.calls = append(st.calls, fmt.Sprintf("%d: %s", jobID, reason))
	st.mu.Unlock()
	for _, step := range [][2]string{{models.JobRunning, models.JobPreempting}, {models.JobPreempting, models.JobQueued}, {models.JobQueued, models.JobHeld}} {
		if err := st.s.TransitionJob(ctx, jobID, store.Transition{From: step[0], To: step[1], Reason: "governance", Actor: "dispatch"}); err != nil {
			return errors.Join(errors.New("stop job"), err)
		}
	}
	return nil
}

// CheckpointAndRelease does what dispatch does on a release: the job goes to preempting,
// its agent checkpoints and stops it, and it is requeued.
func (st *stopper) CheckpointAndRelease(ctx context.Context, jobID int64, reason string) error {
	st.mu.Lock()
	st.calls = append(st.calls, fmt.Sprintf("release %d: %s", jobID, reason))
	st.mu.Unlock()
	for _, step := range [][2]string{{models.JobRunning, models.JobPreempting}, {models.JobPreempting, models.JobQueued}} {
		if err := st.s.TransitionJob(ctx, jobID, store.Transition{From: step[0], To: step[1], Reason: "released", Actor: "dispatch"}); err != nil {
			return errors.Join(errors.New("release job"), err)
		}
	}
	return nil
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fmt0(id int64) string { return fmt.Sprint(id) }
