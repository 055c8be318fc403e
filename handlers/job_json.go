package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

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
	ImageName     string            `json:"image_name,omitempty"` // not in lists
	Command       []string          `json:"command,omitempty"`    // not in lists
	Env           map[string]string `json:"env,omitempty"`        // secret values masked
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
	RerunOf        *int64           `json:"rerun_of,omitempty"` // not in lists
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
		Retries: j.Retries, Attempt: j.Attempt, ExitCode: j.ExitCode, RerunOf: j.RerunOf, SubmittedAt: j.SubmittedAt,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		Resources: jobs.Resources{
			GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUMemoryMiB: j.GPUMemoryMiB, GPUModel: j.GPUModel,
			MIGProfile: j.MIGProfile, NVLink: j.NVLink, CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, ScratchMiB: j.ScratchMiB,
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

// appendJobJSON appends v to b exactly as encoding/json writes it. A listed job (no
// command, environment, events or allocations) is written field by field: through
// reflection, encoding a page of jobs cost more than a tenth of a list request's CPU.
// Any other is left to encoding/json.
func appendJobJSON(b []byte, v *jobJSON) ([]byte, error) {
	if len(v.Command) > 0 || len(v.Env) > 0 || len(v.SecretEnv) > 0 || len(v.Events) > 0 || len(v.Allocations) > 0 || v.RerunOf != nil || v.ImageName != "" {
		out, err := json.Marshal(v)
		return append(b, out...), err
	}
	var err error
	b = strconv.AppendInt(append(b, `{"id":`...), v.ID, 10)
	b = appendJSONString(append(b, `,"name":`...), v.Name)
	b = appendJSONString(append(b, `,"project":`...), v.Project)
	b = appendJSONString(append(b, `,"user":`...), v.User)
	b = appendJSONString(append(b, `,"state":`...), v.State)
	if v.StateReason != "" {
		b = appendJSONString(append(b, `,"state_reason":`...), v.StateReason)
	}
	if v.PendingReason != "" {
		b = appendJSONString(append(b, `,"pending_reason":`...), v.PendingReason)
	}
	if v.Image != "" {
		b = appendJSONString(append(b, `,"image":`...), v.Image)
	}
	r := &v.Resources
	b = strconv.AppendInt(append(b, `,"resources":{"gpus":`...), int64(r.GPUs), 10)
	b = strconv.AppendInt(append(b, `,"gpu_milli":`...), int64(r.GPUMilli), 10)
	b = strconv.AppendInt(append(b, `,"gpu_memory_mib":`...), r.GPUMemoryMiB, 10)
	b = appendJSONString(append(b, `,"gpu_model":`...), r.GPUModel)
	b = appendJSONString(append(b, `,"mig_profile":`...), r.MIGProfile)
	if r.NVLink {
		b = append(b, `,"nvlink":true`...)
	}
	b = strconv.AppendInt(append(b, `,"cpu_milli":`...), r.CPUMilli, 10)
	b = strconv.AppendInt(append(b, `,"memory_mib":`...), r.MemoryMiB, 10)
	b = strconv.AppendInt(append(b, `,"scratch_mib":`...), r.ScratchMiB, 10)
	b = append(b, '}')
	if v.Kind != "" {
		b = appendJSONString(append(b, `,"kind":`...), v.Kind)
	}
	b = appendJSONString(append(b, `,"priority_class":`...), v.PriorityClass)
	b = strconv.AppendBool(append(b, `,"preemptible":`...), v.Preemptible)
	b = strconv.AppendBool(append(b, `,"spot":`...), v.Spot)
	b = strconv.AppendInt(append(b, `,"replicas":`...), int64(v.Replicas), 10)
	b = strconv.AppendInt(append(b, `,"max_retries":`...), int64(v.MaxRetries), 10)
	if v.ExpectedRunSec != 0 {
		b = strconv.AppendInt(append(b, `,"expected_run_sec":`...), v.ExpectedRunSec, 10)
	}
	b = strconv.AppendInt(append(b, `,"retries":`...), int64(v.Retries), 10)
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(v.Attempt), 10)
	b = append(b, `,"exit_code":`...)
	if v.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*v.ExitCode), 10)
	}
	if b, err = appendJSONTime(append(b, `,"submitted_at":`...), &v.SubmittedAt); err != nil {
		return nil, err
	}
	if b, err = appendJSONTime(append(b, `,"started_at":`...), v.StartedAt); err != nil {
		return nil, err
	}
	if b, err = appendJSONTime(append(b, `,"finished_at":`...), v.FinishedAt); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendJSONTime appends t as encoding/json does (RFC 3339 with nanoseconds; null for
// nil), failing where it does: a year outside 0-9999.
func appendJSONTime(b []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	b, err := t.AppendText(append(b, '"'))
	if err != nil {
		return nil, fmt.Errorf("encode time: %w", err)
	}
	return append(b, '"'), nil
}

// appendJSONString appends s quoted as encoding/json does: <, > and & escaped for
// HTML, as are U+2028 and U+2029; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
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

// nameImage sets the name of j's catalog image in v: what a submission names it by
// (its reference alone does not say which entry it is, and the built-in plain-command
// has none).
func (h *Handler) nameImage(ctx context.Context, j *models.Job, v *jobJSON) error {
	if j.ImageID == nil {
		return nil
	}
	img, err := h.store.ImageByID(ctx, *j.ImageID)
	if err != nil {
		return fmt.Errorf("image of job %d: %w", j.ID, err)
	}
	v.ImageName = img.Name
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
	if err := h.nameImage(ctx, j, &v); err != nil {
		return jobJSON{}, err
	}
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
		devs, err := agentapi.ParseDevices(a.Devices)
		if err != nil {
			return jobJSON{}, fmt.Errorf("devices of allocation %d: %w", a.ID, err)
		}
		if devs != nil {
			av.GPUs = devs
		}
		v.Allocations = append(v.Allocations, av)
	}
	return v, nil
}
