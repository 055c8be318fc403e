package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// jobJSON is a job as the API shows it.
type jobJSON struct {
	ID            int64             `json:"id"`
	Name          string            `json:"name"`
	Project       string            `json:"project"`
	User          string            `json:"user"`
	State         string            `json:"state"`
	StateReason   string            `json:"state_reason,omitempty"`
	PendingReason string            `json:"pending_reason,omitempty"`
	Image         string            `json:"image,omitempty"`
	Command       []string          `json:"command,omitempty"` // not in lists
	Env           map[string]string `json:"env,omitempty"`     // secret values masked
	SecretEnv     []string          `json:"secret_env,omitempty"`
	Resources     jobs.Resources    `json:"resources"`
	Kind          string            `json:"kind,omitempty"`
	PriorityClass string            `json:"priority_class"`
	Preemptible   bool              `json:"preemptible"`
	Spot          bool              `json:"spot"`
	Replicas      int               `json:"replicas"`
	MaxRetries    int               `json:"max_retries"`
	// ExpectedRunSec is how long it expects to run; 0 for unknown.
	ExpectedRunSec int64            `json:"expected_run_sec,omitempty"`
	Retries        int              `json:"retries"`
	Attempt        int              `json:"attempt"`
	ExitCode       *int             `json:"exit_code"`
	SubmittedAt    time.Time        `json:"submitted_at"`
	StartedAt      *time.Time       `json:"started_at"`
	FinishedAt     *time.Time       `json:"finished_at"`
	Events         []jobEventJSON   `json:"events,omitempty"`
	Allocations    []allocationJSON `json:"allocations,omitempty"`
}

type jobEventJSON struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"`
	Actor   string    `json:"actor,omitempty"`
}

type allocationJSON struct {
	Attempt    int               `json:"attempt"`
	Replica    int               `json:"replica"`
	Node       string            `json:"node"`
	GPUs       []agentapi.Device `json:"gpus"`
	State      string            `json:"state"`
	StopReason string            `json:"stop_reason,omitempty"`
	ExitCode   *int              `json:"exit_code"`
	StartedAt  *time.Time        `json:"started_at"`
	EndedAt    *time.Time        `json:"ended_at"`
}

// jobView renders j; project and user name its project and submitter.
func jobView(j *models.Job, project, user string) jobJSON {
	v := jobJSON{
		ID: j.ID, Name: j.Name, Project: project, User: user, State: j.State, StateReason: j.StateReason,
		PendingReason: j.PendingReason, Kind: j.Kind, Image: j.ImageRef, PriorityClass: j.PriorityClass,
		Preemptible: j.Preemptible, Spot: j.Spot, Replicas: j.Replicas, MaxRetries: j.MaxRetries, ExpectedRunSec: j.ExpectedRunSec,
		Retries: j.Retries, Attempt: j.Attempt, ExitCode: j.ExitCode, SubmittedAt: j.SubmittedAt,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		Resources: jobs.Resources{
			GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUMemoryMiB: j.GPUMemoryMiB, GPUModel: j.GPUModel,
			MIGProfile: j.MIGProfile, CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, ScratchMiB: j.ScratchMiB,
		},
	}
	// Both were encoded by jobs.Submit; a row that does not decode shows empty (and a
	// list reads neither).
	if j.Command != "" {
		json.Unmarshal([]byte(j.Command), &v.Command)
	}
	if j.Env != "" {
		json.Unmarshal([]byte(j.Env), &v.Env)
	}
	return v
}

// maskSecretEnv adds the job's secret variables to v, their values masked.
func (h *Handler) maskSecretEnv(ctx context.Context, v *jobJSON) error {
	names, err := h.jobs.SecretEnvNames(ctx, v.ID)
	if err != nil || len(names) == 0 {
		return err
	}
	if v.Env == nil {
		v.Env = make(map[string]string, len(names))
	}
	for _, k := range names {
		v.Env[k] = jobs.Masked
	}
	v.SecretEnv = names
	return nil
}

// jobDetail renders j with its events and allocations.
func (h *Handler) jobDetail(ctx context.Context, j *models.Job) (jobJSON, error) {
	p, err := h.store.ProjectByID(ctx, j.ProjectID)
	if err != nil {
		return jobJSON{}, err
	}
	users, err := h.store.UsernamesByID(ctx, []int64{j.UserID})
	if err != nil {
		return jobJSON{}, err
	}
	v := jobView(j, p.Name, users[j.UserID])
	if err := h.maskSecretEnv(ctx, &v); err != nil {
		return jobJSON{}, err
	}
	events, err := h.jobs.Events(ctx, j.ID)
	if err != nil {
		return jobJSON{}, err
	}
	for _, e := range events {
		v.Events = append(v.Events, jobEventJSON{At: e.CreatedAt, Attempt: e.Attempt, From: e.FromState, To: e.ToState, Reason: e.Reason, Message: e.Message, Actor: e.Actor})
	}
	allocs, err := h.jobs.Allocations(ctx, j.ID)
	if err != nil {
		return jobJSON{}, err
	}
	names := map[int64]string{}
	for _, a := range allocs {
		if _, ok := names[a.NodeID]; !ok {
			n, err := h.store.NodeByID(ctx, a.NodeID)
			if err != nil {
				return jobJSON{}, err
			}
			names[a.NodeID] = n.Name
		}
		av := allocationJSON{Attempt: a.Attempt, Replica: a.Replica, Node: names[a.NodeID], State: a.State,
			StopReason: a.StopReason, ExitCode: a.ExitCode, StartedAt: a.StartedAt, EndedAt: a.EndedAt, GPUs: []agentapi.Device{}}
		if a.Devices != "" {
			json.Unmarshal([]byte(a.Devices), &av.GPUs)
		}
		v.Allocations = append(v.Allocations, av)
	}
	return v, nil
}
