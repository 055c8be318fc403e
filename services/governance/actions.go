package governance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// actor names governance in job events.
const actor = "governance"

// ActionRecord is what an alert's action did (or, in a dry run, would have done), kept
// on the alert as JSON so that it can be shown and reverted.
type ActionRecord struct {
	Kind   string      `json:"kind"`
	Rule   string      `json:"rule"`
	DryRun bool        `json:"dry_run"`
	At     time.Time   `json:"at"`
	Jobs   []JobChange `json:"jobs"`
	// Notes say what was left alone and why, or why the action failed.
	Notes      []string   `json:"notes,omitempty"`
	Failed     bool       `json:"failed,omitempty"`
	RevertedAt *time.Time `json:"reverted_at,omitempty"`
	RevertedBy string     `json:"reverted_by,omitempty"`
}

// JobChange is one job an action changed: its state (hold, stop) or priority class.
type JobChange struct {
	JobID int64  `json:"job_id"`
	Name  string `json:"name"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Action reads the action record of an alert; ok is false when it took none.
func Action(a models.Alert) (ActionRecord, bool) {
	var rec ActionRecord
	if a.ActionTaken == "" || json.Unmarshal([]byte(a.ActionTaken), &rec) != nil {
		return ActionRecord{}, false
	}
	return rec, true
}

// act carries out (or dry-runs) r's action for the new alert a, records it on a and in
// the audit log, and returns a problem line when it failed. A hold or a lower priority
// changes the jobs in the transaction that records it, so no job changes unaudited; a
// stop goes through dispatch, which audits each stop with it.
func (s *Service) act(ctx context.Context, r models.AlertRule, a *models.Alert, f finding, now time.Time) string {
	rec := ActionRecord{Kind: r.Action, Rule: r.Name, DryRun: r.DryRun, At: now}
	reason := fmt.Sprintf("alert #%d of rule %s: %s", a.ID, r.Name, f.summary)
	detail := map[string]any{"rule": r.Name, "evidence": json.RawMessage(a.Evidence)}
	var err error
	switch r.Action {
	case ActionHold, ActionLowerPriority:
		err = s.store.InTx(ctx, func(tx *store.Store) error {
			done := rec
			var err error
			if r.Action == ActionHold {
				err = s.hold(ctx, tx, f.projectIDs, reason, &done)
			} else {
				err = s.lowerPriority(ctx, tx, f, reason, &done)
			}
			if err != nil {
				return err
			}
			return s.recordIn(ctx, tx, a, done, "governance.action", detail)
		})
		if err == nil {
			return ""
		}
		// Nothing changed: record the failure on its own.
	case ActionStop:
		err = s.stop(ctx, f.jobID, reason, false, &rec)
	case ActionRelease:
		err = s.stop(ctx, f.jobID, reason, true, &rec)
	default:
		err = fmt.Errorf("unknown action %q", r.Action)
	}
	if err != nil {
		rec.Failed = true
		rec.Notes = append(rec.Notes, err.Error())
	}
	if err := s.record(ctx, a, rec, "governance.action", detail); err != nil {
		return fmt.Sprintf("alert #%d: record action: %v", a.ID, err)
	}
	if rec.Failed {
		s.log.Warn("governance action failed", "alert", a.ID, "rule", r.Name, "action", r.Action, "notes", rec.Notes)
		return fmt.Sprintf("alert #%d: %s failed: %s", a.ID, r.Action, rec.Notes[len(rec.Notes)-1])
	}
	return ""
}

// record writes rec onto a and appends an audit event, in one transaction.
func (s *Service) record(ctx context.Context, a *models.Alert, rec ActionRecord, action string, detail map[string]any) error {
	return s.store.InTx(ctx, func(tx *store.Store) error { return s.recordIn(ctx, tx, a, rec, action, detail) })
}

// recordIn writes rec onto a and appends an audit event, in tx.
func (s *Service) recordIn(ctx context.Context, tx *store.Store, a *models.Alert, rec ActionRecord, action string, detail map[string]any) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode action: %w", err)
	}
	a.ActionTaken = string(raw)
	detail["action"] = rec
	if err := tx.UpdateAlert(ctx, a); err != nil {
		return err
	}
	return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "alert", ObjectID: fmt.Sprint(a.ID), Detail: detail})
}

// queuedJobs lists the queued jobs of projects.
func queuedJobs(ctx context.Context, st *store.Store, projectIDs []int64) ([]models.Job, error) {
	if len(projectIDs) == 0 {
		return nil, nil
	}
	var out []models.Job
	for before := int64(0); ; {
		page, err := st.Jobs(ctx, store.JobFilter{ProjectIDs: projectIDs, States: []string{models.JobQueued}, BeforeID: before, Limit: 500})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 500 {
			return out, nil
		}
		before = page[len(page)-1].ID
	}
}

// hold moves the queued jobs of projects to held, in tx.
func (s *Service) hold(ctx context.Context, tx *store.Store, projectIDs []int64, reason string, rec *ActionRecord) error {
	jobs, err := queuedJobs(ctx, tx, projectIDs)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if !rec.DryRun {
			err := tx.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobHeld, Reason: "governance", Message: reason, Actor: actor})
			if errors.Is(err, store.ErrStale) {
				rec.Notes = append(rec.Notes, fmt.Sprintf("job %s (#%d) left the queue meanwhile: not held", j.Name, j.ID))
				continue
			}
			if err != nil {
				return err
			}
		}
		rec.Jobs = append(rec.Jobs, JobChange{JobID: j.ID, Name: j.Name, From: models.JobQueued, To: models.JobHeld})
	}
	return nil
}

// lowerPriority moves a job (job rules) or the queued jobs of the projects (other
// rules) one priority class down, in tx.
func (s *Service) lowerPriority(ctx context.Context, tx *store.Store, f finding, reason string, rec *ActionRecord) error {
	var jobs []models.Job
	if f.jobID != 0 {
		j, err := tx.JobByID(ctx, f.jobID)
		if err != nil {
			return err
		}
		jobs = []models.Job{*j}
	} else {
		var err error
		if jobs, err = queuedJobs(ctx, tx, f.projectIDs); err != nil {
			return err
		}
	}
	classes, err := tx.PriorityClasses(ctx) // highest weight first
	if err != nil {
		return err
	}
	for _, j := range jobs {
		lower := ""
		for i, c := range classes {
			if c.Name == j.PriorityClass && i+1 < len(classes) {
				lower = classes[i+1].Name
			}
		}
		if lower == "" {
			rec.Notes = append(rec.Notes, fmt.Sprintf("job %s (#%d) is in the lowest class %s already", j.Name, j.ID, j.PriorityClass))
			continue
		}
		if !rec.DryRun {
			err := tx.SetJobPriorityClass(ctx, j.ID, j.PriorityClass, lower, "governance", reason, actor)
			if errors.Is(err, store.ErrStale) {
				rec.Notes = append(rec.Notes, fmt.Sprintf("job %s (#%d) changed class meanwhile: left alone", j.Name, j.ID))
				continue
			}
			if err != nil {
				return err
			}
		}
		rec.Jobs = append(rec.Jobs, JobChange{JobID: j.ID, Name: j.Name, From: j.PriorityClass, To: lower})
	}
	return nil
}

// stop asks dispatch to checkpoint and stop the job, and to hold it or, releasing its
// GPUs, to requeue it.
func (s *Service) stop(ctx context.Context, jobID int64, reason string, release bool, rec *ActionRecord) error {
	j, err := s.store.JobByID(ctx, jobID)
	if err != nil {
		return err
	}
	if j.State != models.JobRunning {
		rec.Notes = append(rec.Notes, fmt.Sprintf("job %s (#%d) is %s, not running: left alone", j.Name, j.ID, j.State))
		return nil
	}
	to, do := models.JobHeld, func() error { return s.stopper.CheckpointAndStop(ctx, j.ID, reason) }
	if release {
		to, do = models.JobQueued, func() error { return s.stopper.CheckpointAndRelease(ctx, j.ID, reason) }
	}
	if !rec.DryRun {
		if s.stopper == nil {
			return errors.New("no stopper is configured: this server cannot stop jobs")
		}
		if err := do(); err != nil {
			return fmt.Errorf("checkpoint and stop job %d: %w", j.ID, err)
		}
	}
	rec.Jobs = append(rec.Jobs, JobChange{JobID: j.ID, Name: j.Name, From: models.JobRunning, To: to})
	return nil
}

// Revert undoes the action of alert id as far as the jobs still are as it left them:
// held jobs go back to the queue, lowered jobs back to their class. What changed since
// is left alone and noted. The actor of ctx is recorded and audited.
func (s *Service) Revert(ctx context.Context, id int64, now time.Time) (*models.Alert, error) {
	a, err := s.store.AlertByID(ctx, id)
	if err != nil {
		return nil, err
	}
	rec, ok := Action(*a)
	switch {
	case !ok:
		return nil, models.Invalid("alert", "alert #%d took no action", id)
	case rec.DryRun:
		return nil, models.Invalid("alert", "alert #%d only dry-ran its action: there is nothing to revert", id)
	case rec.Kind == ActionRelease:
		return nil, models.Invalid("alert", "a release undoes itself: the job went back to the queue and resumes from its checkpoint once GPUs are free")
	case rec.RevertedAt != nil:
		return nil, models.Invalid("alert", "the action of alert #%d was reverted at %s by %s", id, rec.RevertedAt.Format(time.RFC3339), rec.RevertedBy)
	}
	who := audit.ActorFrom(ctx).Name
	// The jobs go back and the revert is recorded and audited in one transaction.
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		done := rec
		for _, c := range rec.Jobs {
			var err error
			switch rec.Kind {
			case ActionHold, ActionStop:
				err = tx.TransitionJob(ctx, c.JobID, store.Transition{From: models.JobHeld, To: models.JobQueued, Reason: "governance-reverted",
					Message: fmt.Sprintf("action of alert #%d reverted by %s", id, who), Actor: who})
			case ActionLowerPriority:
				err = tx.SetJobPriorityClass(ctx, c.JobID, c.To, c.From, "governance-reverted",
					fmt.Sprintf("action of alert #%d reverted by %s", id, who), who)
			}
			if errors.Is(err, store.ErrStale) {
				done.Notes = append(done.Notes, fmt.Sprintf("revert: job %s (#%d) is no longer %s: left alone", c.Name, c.JobID, c.To))
				continue
			}
			if err != nil {
				return err
			}
		}
		t := now.UTC()
		done.RevertedAt, done.RevertedBy = &t, who
		return s.recordIn(ctx, tx, a, done, "governance.action.reverted", map[string]any{})
	})
	if err != nil {
		return nil, fmt.Errorf("revert action of alert %d: %w", id, err)
	}
	return a, nil
}
