package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// Job tokens. Each allocation (one replica of one attempt) gets a token when its
// lease is first issued; the lease carries it to the agent once, the agent hands it
// to the job as GANTRY_JOB_TOKEN, and only its SHA-256 is stored. It speaks for that
// job and attempt alone, and only until the allocation ends.

// withJobTokens mints the token of every allocation in l that has not started and
// has none yet. issued are the allocations of l.Allocations, in order. The version
// of l is left as it was: a token is not a change of what the node should run.
func (s *Service) withJobTokens(ctx context.Context, l agentapi.Leases, issued []models.Allocation) (agentapi.Leases, error) {
	for i, a := range issued {
		if a.State != models.AllocPending || a.JobTokenHash != "" {
			continue
		}
		token := newSecret(JobTokenPrefix)
		err := s.store.SetJobTokenHash(ctx, a.ID, hashSecret(token), false)
		if errors.Is(err, store.ErrStale) {
			continue // another poll minted it, or the attempt started meanwhile
		}
		if err != nil {
			return agentapi.Leases{}, fmt.Errorf("job token of job %d attempt %d: %w", a.JobID, a.Attempt, err)
		}
		l.Allocations[i].JobToken = token
	}
	return l, nil
}

// ReissueJobToken mints a new token for an attempt that has not started, for an
// agent that lost the lease answer which carried the first (the earlier token stops
// holding). It is refused once the attempt started: its job holds its token.
func (s *Service) ReissueJobToken(ctx context.Context, node *models.Node, ref agentapi.AttemptRef) (string, error) {
	if err := ref.Validate(); err != nil {
		return "", err
	}
	ctx = asNode(ctx, node.Name)
	token := newSecret(JobTokenPrefix)
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		a, job, err := fence(ctx, tx, node, ref)
		if err != nil {
			return err
		}
		started := fmt.Errorf("%w: %s has started and its job holds its token", store.ErrConflict, ref)
		if a.State != models.AllocPending {
			return started
		}
		if err := tx.SetJobTokenHash(ctx, a.ID, hashSecret(token), true); errors.Is(err, store.ErrStale) {
			return started
		} else if err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job_token.reissued", ObjectType: "job", ObjectID: strconv.FormatInt(job.ID, 10),
			ProjectID: &job.ProjectID, Detail: map[string]int{"attempt": ref.Attempt, "replica": ref.Replica}})
	})
	if err != nil {
		return "", fmt.Errorf("reissue the job token of %s: %w", ref, err)
	}
	return token, nil
}

// JobCaller is a running job that proved itself with its job token.
type JobCaller struct {
	Allocation *models.Allocation
	Job        *models.Job
}

// AuthenticateJob returns the caller whose job token is token, when its job is jobID
// and its allocation has not ended. A missing, unknown or ended token is
// ErrUnauthorized; a token of another job is ErrOtherJob. Refusals are audited.
func (s *Service) AuthenticateJob(ctx context.Context, token string, jobID int64) (*JobCaller, error) {
	refuse := func(err error) (*JobCaller, error) {
		aerr := s.audit.Append(ctx, audit.Entry{Action: "job_token.refused", ObjectType: "job", ObjectID: strconv.FormatInt(jobID, 10),
			Detail: map[string]string{"reason": err.Error()}})
		if aerr != nil {
			s.log.Error("cannot audit a refused job token", "err", aerr)
		}
		return nil, err
	}
	if token == "" {
		return refuse(fmt.Errorf("%w: no job token: send the job's GANTRY_JOB_TOKEN as Authorization: Bearer", ErrUnauthorized))
	}
	a, err := s.store.AllocationByJobTokenHash(ctx, hashSecret(token))
	if errors.Is(err, store.ErrNotFound) {
		return refuse(fmt.Errorf("%w: unknown job token", ErrUnauthorized))
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate a job token: %w", err)
	}
	if a.JobID != jobID {
		return refuse(fmt.Errorf("%w: it was issued to job %d", ErrOtherJob, a.JobID))
	}
	job, err := s.store.JobByID(ctx, a.JobID)
	if err != nil {
		return nil, fmt.Errorf("authenticate a job token: %w", err)
	}
	if a.State == models.AllocEnded || job.Attempt != a.Attempt {
		return refuse(fmt.Errorf("%w: the attempt this job token was issued to (attempt %d) has ended", ErrUnauthorized, a.Attempt))
	}
	return &JobCaller{Allocation: a, Job: job}, nil
}

// jobActor names the attempt that speaks with a job token in the audit log.
func jobActor(ctx context.Context, a *models.Allocation) context.Context {
	act := audit.ActorFrom(ctx)
	act.Name, act.Type = fmt.Sprintf("job %d attempt %d replica %d", a.JobID, a.Attempt, a.Replica), models.ActorJob
	return audit.WithActor(ctx, act)
}

// RecordJobMetrics stores a batch of metrics and checkpoint events that a job
// reported with its token (see telemetry.RecordJobMetrics for what is refused).
// A checkpoint event while the attempt is being stopped answers the stop's
// checkpoint request: the agent goes on to stop it without waiting out the grace.
//
// Metric points are not audited: a job may report every few seconds for weeks, and
// the points themselves are its record. Checkpoint events are (they move a stop on,
// and resuming depends on them), and so are refused tokens.
func (s *Service) RecordJobMetrics(ctx context.Context, caller *JobCaller, b telemetry.MetricBatch) (telemetry.MetricResult, error) {
	a, job := caller.Allocation, caller.Job
	jobID := job.ID
	if s.telemetry == nil {
		return telemetry.MetricResult{}, fmt.Errorf("metrics of job %d: %w", jobID, ErrNoTelemetry)
	}
	ctx = jobActor(ctx, a)
	now := s.now().UTC()
	res, err := s.telemetry.RecordJobMetrics(ctx, now, job, b)
	if err != nil || len(b.Checkpoints) == 0 {
		return res, err
	}
	answered, err := s.store.MarkCheckpointSaved(ctx, a.ID, now)
	if err != nil {
		return res, fmt.Errorf("metrics of job %d: %w", jobID, err)
	}
	step := b.Checkpoints[0].Step
	for _, c := range b.Checkpoints {
		step = max(step, c.Step)
	}
	err = s.audit.Append(ctx, audit.Entry{Action: "job.checkpointed", ObjectType: "job", ObjectID: strconv.FormatInt(job.ID, 10), ProjectID: &job.ProjectID,
		Detail: map[string]any{"attempt": a.Attempt, "replica": a.Replica, "step": step, "answers_stop": answered}})
	if err != nil {
		return res, fmt.Errorf("metrics of job %d: %w", jobID, err)
	}
	if answered {
		s.nodes.notify(a.NodeID)
	}
	return res, nil
}
