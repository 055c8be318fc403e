package governance_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func (e *env) state(j *models.Job) (string, string) {
	e.t.Helper()
	got, err := e.s.JobByID(e.ctx, j.ID)
	must(e.t, err)
	return got.State, got.PriorityClass
}

// A spike holds the team's queued jobs (a dry run only says which it would); the hold is
// recorded with rule and evidence, audited, and reverted from the alert.
func TestHoldActionDryRunApplyAndRevert(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		e.disable("team-cost-spike")
		spike := governance.RuleInput{Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "hold", Enabled: true}
		spike.Name, spike.DryRun = "cost-a-dry-run", true
		e.rule(spike)
		spike.Name, spike.DryRun = "cost-b-hold", false
		e.rule(spike)
		q1, q2 := e.job("q1", "ada", "detect", models.JobQueued), e.job("q2", "ada", "detect", models.JobQueued)
		running := e.job("r1", "ada", "detect", models.JobRunning)
		other := e.job("qa", "bob", "speech", models.JobQueued)
		for d := 1; d <= 7; d++ {
			e.spend("detect", 10, tue.AddDate(0, 0, -d))
		}
		e.spend("detect", 30, tue.Add(-time.Hour))
		rep := e.evaluate(tue)
		if len(rep.Raised) != 2 {
			t.Fatalf("raised %d alerts, want the dry run's and the hold's", len(rep.Raised))
		}
		alerts, err := e.gov.Alerts(e.ctx, store.AlertFilter{})
		must(t, err)
		byRule := map[int64]models.Alert{}
		for _, a := range alerts {
			byRule[a.RuleID] = a
		}
		rules, err := e.gov.Rules(e.ctx)
		must(t, err)
		var dry, held models.Alert
		for _, r := range rules {
			switch r.Name {
			case "cost-a-dry-run":
				dry = byRule[r.ID]
			case "cost-b-hold":
				held = byRule[r.ID]
			}
		}
		dryRec, ok := governance.Action(dry)
		if !ok || !dryRec.DryRun || dryRec.Kind != "hold" || len(dryRec.Jobs) != 2 {
			t.Fatalf("dry-run record = %+v", dryRec)
		}
		rec, ok := governance.Action(held)
		if !ok || rec.DryRun || rec.Rule != "cost-b-hold" || len(rec.Jobs) != 2 || rec.Failed {
			t.Fatalf("hold record = %+v", rec)
		}
		for _, c := range rec.Jobs {
			if c.From != "queued" || c.To != "held" || (c.JobID != q1.ID && c.JobID != q2.ID) {
				t.Errorf("hold changed %+v", c)
			}
		}
		for j, want := range map[*models.Job]string{q1: "held", q2: "held", running: "running", other: "queued"} {
			if got, _ := e.state(j); got != want {
				t.Errorf("job %s is %s, want %s", j.Name, got, want)
			}
		}
		events, err := s.JobEvents(e.ctx, q1.ID)
		must(t, err)
		last := events[len(events)-1]
		if last.Reason != "governance" || !strings.Contains(last.Message, "of rule cost-b-hold: team vision spent 30.00 USD today") {
			t.Errorf("hold event = %+v", last)
		}
		page, err := e.audit.Events(e.ctx, store.AuditFilter{Action: "governance.action"}, 0, 10)
		must(t, err)
		if len(page.Events) != 2 || !strings.Contains(page.Events[0].Detail, `"rule":"cost-b-hold"`) || !strings.Contains(page.Events[0].Detail, `"ratio_pct":300`) {
			t.Errorf("audit of the actions = %+v", page.Events)
		}

		var fe *models.FieldError
		if _, err := e.gov.Revert(e.ctx, dry.ID, tue); !errors.As(err, &fe) || !strings.Contains(fe.Message, "only dry-ran") {
			t.Errorf("reverting a dry run: %v", err)
		}
		must(t, s.TransitionJob(e.ctx, q2.ID, store.Transition{From: models.JobHeld, To: models.JobCancelled, Reason: "user"}))
		ctx := audit.WithActor(e.ctx, audit.Actor{Name: "ada", Type: models.ActorUser})
		a, err := e.gov.Revert(ctx, held.ID, tue.Add(time.Hour))
		must(t, err)
		rec, _ = governance.Action(*a)
		if rec.RevertedAt == nil || rec.RevertedBy != "ada" || !slices.ContainsFunc(rec.Notes, func(n string) bool { return strings.Contains(n, "q2") && strings.Contains(n, "left alone") }) {
			t.Errorf("reverted record = %+v", rec)
		}
		if got, _ := e.state(q1); got != "queued" {
			t.Errorf("q1 after revert is %s, want queued", got)
		}
		if got, _ := e.state(q2); got != "cancelled" {
			t.Errorf("q2 (cancelled meanwhile) is %s", got)
		}
		if _, err := e.gov.Revert(ctx, held.ID, tue.Add(time.Hour)); !errors.As(err, &fe) || !strings.Contains(fe.Message, "reverted at") {
			t.Errorf("second revert: %v", err)
		}
		if page, _ := e.audit.Events(e.ctx, store.AuditFilter{Action: "governance.action.reverted", Actor: "ada"}, 0, 10); len(page.Events) != 1 {
			t.Errorf("revert not audited as ada: %+v", page.Events)
		}
	})
}

// An idle job is lowered one class, or checkpointed and stopped (held by dispatch), and
// each is reverted; a dry run of the stop never reaches dispatch.
func TestIdleJobActions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		now := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Minute)
		idle := func(name string) *models.Job {
			j := e.job(name, "ada", "detect", models.JobRunning)
			e.rawUtil(j, "g0", now.Add(-2*time.Hour), now.Add(-90*time.Minute), now)
			return j
		}
		rule := governance.RuleInput{Name: "job-gpu-idle", Metric: "job_idle_minutes", Threshold: 60, Action: "lower-priority", Enabled: true}

		lowered := idle("lowered")
		e.rule(rule)
		rep := e.evaluate(now)
		if len(rep.Raised) != 1 {
			t.Fatalf("raised %+v", rep.Raised)
		}
		if st, class := e.state(lowered); st != "running" || class != "test" {
			t.Errorf("lowered job is %s in %s, want running in test", st, class)
		}
		_, err := e.gov.Revert(e.ctx, rep.Raised[0].ID, now)
		must(t, err)
		if _, class := e.state(lowered); class != "research" {
			t.Errorf("after revert the class is %s, want research", class)
		}

		rule.Action, rule.DryRun = "stop", true
		e.rule(rule)
		dry := idle("dry")
		rep = e.evaluate(now)
		if len(rep.Raised) != 1 || rep.Raised[0].ScopeID != dry.ID || len(e.stopper.calls) != 0 {
			t.Fatalf("dry-run stop raised %+v and called the stopper %v", rep.Raised, e.stopper.calls)
		}
		if st, _ := e.state(dry); st != "running" {
			t.Errorf("dry-run stop left the job %s", st)
		}

		rule.DryRun = false
		e.rule(rule)
		stopped := idle("stopped")
		rep = e.evaluate(now)
		if len(rep.Raised) != 1 || len(e.stopper.calls) != 1 || !strings.HasPrefix(e.stopper.calls[0], fmt0(stopped.ID)+": alert #") {
			t.Fatalf("stop raised %+v, stopper calls %v", rep.Raised, e.stopper.calls)
		}
		if st, _ := e.state(stopped); st != "held" {
			t.Errorf("stopped job is %s, want held", st)
		}
		_, err = e.gov.Revert(e.ctx, rep.Raised[0].ID, now)
		must(t, err)
		if st, _ := e.state(stopped); st != "queued" {
			t.Errorf("after revert the stopped job is %s, want queued to resume from its checkpoint", st)
		}

		rule.Action = "release"
		e.rule(rule)
		released := idle("released")
		rep = e.evaluate(now)
		if len(rep.Raised) != 1 || len(e.stopper.calls) != 2 || !strings.HasPrefix(e.stopper.calls[1], "release "+fmt0(released.ID)+": alert #") {
			t.Fatalf("release raised %+v, stopper calls %v", rep.Raised, e.stopper.calls)
		}
		if st, _ := e.state(released); st != "queued" {
			t.Errorf("released job is %s, want queued: its GPUs are free and it resumes from its checkpoint", st)
		}
		if rec, ok := governance.Action(rep.Raised[0]); !ok || rec.Kind != "release" || len(rec.Jobs) != 1 || rec.Jobs[0].To != "queued" {
			t.Errorf("release recorded as %+v", rec)
		}
		var fe *models.FieldError
		if _, err := e.gov.Revert(e.ctx, rep.Raised[0].ID, now); !errors.As(err, &fe) || !strings.Contains(fe.Message, "a release undoes itself") {
			t.Errorf("revert of a release: %v", err)
		}
	})
}

// Without a stopper the stop fails, is recorded on the alert, and is reported.
func TestStopWithoutStopperIsReported(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		gov, err := governance.New(governance.Deps{Store: s, Accounting: e.acc, Audit: e.audit, Idle: e.tel, Log: discard()}, governance.Config{})
		must(t, err)
		e.gov = gov
		now := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Minute)
		j := e.job("idle", "ada", "detect", models.JobRunning)
		e.rawUtil(j, "g0", now.Add(-2*time.Hour), now.Add(-90*time.Minute), now)
		e.rule(governance.RuleInput{Name: "job-gpu-idle", Metric: "job_idle_minutes", Threshold: 60, Action: "stop", Enabled: true})
		rep, err := gov.Evaluate(e.ctx, now)
		must(t, err)
		if len(rep.Raised) != 1 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no stopper is configured") {
			t.Fatalf("report = %+v", rep)
		}
		a, _, err := gov.AlertByID(e.ctx, rep.Raised[0].ID)
		must(t, err)
		if rec, _ := governance.Action(*a); !rec.Failed {
			t.Errorf("failed stop not recorded: %+v", rec)
		}
		if st, _ := e.state(j); st != "running" {
			t.Errorf("job is %s", st)
		}
	})
}

// refuseAuditOf makes the database refuse audit events with action, as a full disk or
// a lost connection would at the worst moment.
func refuseAuditOf(t *testing.T, cfg store.Config, st *store.Store, action string) {
	if st.Dialect() == "postgres" {
		storetest.Exec(t, cfg, `CREATE FUNCTION refuse_audit() RETURNS trigger AS $$ BEGIN
			IF NEW.action = '`+action+`' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`)
		storetest.Exec(t, cfg, "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()")
		return
	}
	storetest.Exec(t, cfg, `CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events WHEN NEW.action = '`+action+`'
		BEGIN SELECT RAISE(ABORT, 'refused'); END`)
}

// A hold changes its jobs in the transaction that audits it: when the audit event
// cannot be written, no job is held.
func TestHoldThatCannotBeAuditedHoldsNothing(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			s := storetest.Open(t, cfg)
			e := newEnv(t, s, governance.Config{})
			e.rule(governance.RuleInput{Name: "team-cost-spike", Metric: "team_cost_ratio", Threshold: 200, WindowSec: 7 * 86400, Action: "hold", Enabled: true})
			q := e.job("q1", "ada", "detect", models.JobQueued)
			for d := 1; d <= 7; d++ {
				e.spend("detect", 10, tue.AddDate(0, 0, -d))
			}
			e.spend("detect", 30, tue.Add(-time.Hour))
			refuseAuditOf(t, cfg, s, "governance.action")
			rep, err := e.gov.Evaluate(e.ctx, tue)
			must(t, err)
			if len(rep.Raised) != 1 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "record action") {
				t.Fatalf("evaluate = %d raised, problems %v; want the alert and its unrecorded action", len(rep.Raised), rep.Problems)
			}
			if got, _ := e.state(q); got != models.JobQueued {
				t.Errorf("job is %s after a hold that could not be audited, want queued", got)
			}
		})
	}
}
