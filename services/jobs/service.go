package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
)

// Kicker wakes the dispatch loop when there is new work.
type Kicker interface{ Kick() }

// Fitter refuses a job that could never run anywhere, with a *models.FieldError
// naming the spec's field and the largest offer the cluster has.
type Fitter interface {
	CheckFit(ctx context.Context, job models.Job) error
}

// Service submits jobs.
type Service struct {
	store    *store.Store
	audit    *audit.Log
	dispatch Kicker
	fit      Fitter
}

// New returns the submission service over st, auditing each submission in log,
// waking dispatch (nil on a server that does not run it) and refusing what fit says
// can never run (nil: no such check).
func New(st *store.Store, log *audit.Log, dispatch Kicker, fit Fitter) *Service {
	return &Service{store: st, audit: log, dispatch: dispatch, fit: fit}
}

// Submit validates spec and queues it as a job of user. Bad input is a
// *models.FieldError and stores nothing.
func (s *Service) Submit(ctx context.Context, user *models.User, spec Spec) (*models.Job, error) {
	return s.submit(ctx, user, spec, nil, nil)
}

// Resubmit queues a new job of user like the earlier job j: its re-run. The audit
// entry names the job it re-runs.
func (s *Service) Resubmit(ctx context.Context, user *models.User, j *models.Job) (*models.Job, error) {
	spec, err := s.SpecOf(ctx, j)
	if err != nil {
		return nil, err
	}
	return s.submit(ctx, user, spec, &j.ID, nil)
}

// submit queues spec as a job of user; also, when not nil, runs in the transaction
// that stores the job, after it.
func (s *Service) submit(ctx context.Context, user *models.User, spec Spec, rerunOf *int64, also func(tx *store.Store, j *models.Job) error) (*models.Job, error) {
	j, secrets, err := s.build(ctx, user, spec)
	if err != nil {
		return nil, err
	}
	detail := map[string]any{"name": j.Name, "gpus": j.GPUs, "gpu_milli": j.GPUMilli, "replicas": j.Replicas, "priority_class": j.PriorityClass}
	if rerunOf != nil {
		detail["rerun_of"] = *rerunOf
		j.RerunOf = rerunOf
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateJob(ctx, j, "user:"+user.Username); err != nil {
			return err
		}
		if err := tx.SetJobSecretEnv(ctx, j.ID, secrets); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx, j); err != nil {
				return err
			}
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job.submitted", ObjectType: "job", ObjectID: strconv.FormatInt(j.ID, 10),
			ProjectID: &j.ProjectID, Detail: detail})
	})
	if err != nil {
		return nil, err
	}
	if s.dispatch != nil {
		s.dispatch.Kick()
	}
	return j, nil
}

// build validates spec and turns it into the job Submit would store, without storing
// it, and the values of its secret variables, which are stored apart from the job.
func (s *Service) build(ctx context.Context, user *models.User, spec Spec) (*models.Job, map[string]string, error) {
	j, err := s.buildJob(ctx, user, spec)
	if err != nil {
		return nil, nil, err
	}
	plain, secrets := splitEnv(spec.Env)
	if len(plain) > 0 {
		env, err := json.Marshal(plain)
		if err != nil {
			return nil, nil, fmt.Errorf("encode env: %w", err)
		}
		j.Env = string(env)
	}
	if err := s.keepSecrets(ctx, user, spec.SecretsOf, secrets); err != nil {
		return nil, nil, err
	}
	return j, secrets, nil
}

// keepSecrets fills the secret variables left empty with the values of job from, a
// clone or re-run of it. Only its submitter gets them: anyone else who re-ran it could
// print them in a log they read.
func (s *Service) keepSecrets(ctx context.Context, user *models.User, from int64, secrets map[string]string) error {
	if from == 0 {
		return nil
	}
	var empty []string
	for k, v := range secrets {
		if v == "" {
			empty = append(empty, k)
		}
	}
	if len(empty) == 0 {
		return nil
	}
	slices.Sort(empty)
	src, err := s.store.JobByID(ctx, from)
	if err != nil {
		return fmt.Errorf("secrets of job %d: %w", from, err)
	}
	kept, err := s.store.JobSecretEnv(ctx, from)
	if err != nil {
		return err
	}
	for _, k := range empty {
		switch _, ok := kept[k]; {
		case !ok:
			continue
		case src.UserID != user.ID:
			return models.Invalid("env."+k, "is secret: job %d keeps its value for the user who submitted it; enter the value yourself", from)
		}
		secrets[k] = kept[k]
	}
	return nil
}

func (s *Service) buildJob(ctx context.Context, user *models.User, spec Spec) (*models.Job, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	project, err := s.store.ProjectByName(ctx, spec.Project)
	if errors.Is(err, store.ErrNotFound) {
		return nil, models.Invalid("project", "there is no project %q", spec.Project)
	}
	if err != nil {
		return nil, err
	}
	if project.Archived {
		return nil, models.Invalid("project", "project %q is archived", spec.Project)
	}
	class, err := s.store.PriorityClassByName(ctx, spec.PriorityClass)
	if errors.Is(err, store.ErrNotFound) {
		return nil, models.Invalid("priority_class", "there is no priority class %q", spec.PriorityClass)
	}
	if err != nil {
		return nil, err
	}
	j := &models.Job{
		Name: spec.Name, Kind: spec.Kind, ProjectID: project.ID, UserID: user.ID,
		GPUs: spec.Resources.GPUs, GPUMilli: spec.Resources.GPUMilli, GPUMemoryMiB: spec.Resources.GPUMemoryMiB,
		GPUModel: spec.Resources.GPUModel, MIGProfile: spec.Resources.MIGProfile, NVLink: spec.Resources.NVLink, CPUMilli: spec.Resources.CPUMilli,
		MemoryMiB: spec.Resources.MemoryMiB, ScratchMiB: spec.Resources.ScratchMiB, Replicas: spec.Replicas,
		PriorityClass: class.Name, Preemptible: class.Preemptible, Spot: spec.Spot, MaxRetries: spec.MaxRetries,
		ExpectedRunSec: spec.ExpectedRunSec,
	}
	if spec.Preemptible != nil {
		j.Preemptible = *spec.Preemptible
	}
	if err := s.resolveImage(ctx, project, spec.Image, j); err != nil {
		return nil, err
	}
	// After the image: whether it names one decides which nodes may run the job.
	if s.fit != nil {
		if err := s.fit.CheckFit(ctx, *j); err != nil {
			return nil, err
		}
	}
	cmd, err := json.Marshal(spec.Command)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	j.Command = string(cmd)
	return j, nil
}

// resolveImage sets the job's image: a catalog entry by name, else a reference
// when the project allows custom images, else the project's default. The built-in
// plain-command entry has no reference: its jobs run on process nodes.
func (s *Service) resolveImage(ctx context.Context, project *models.Project, image string, j *models.Job) error {
	if image == "" {
		if project.DefaultImageID == nil {
			return nil
		}
		img, err := s.store.ImageByID(ctx, *project.DefaultImageID)
		if err != nil {
			return fmt.Errorf("default image of project %s: %w", project.Name, err)
		}
		j.ImageID, j.ImageRef = &img.ID, img.Reference
		return nil
	}
	img, err := s.store.ImageByName(ctx, image)
	switch {
	case err == nil:
		if img.Status == models.ImageDeprecated {
			return models.Invalid("image", "%q is deprecated: pick a certified image", image)
		}
		j.ImageID, j.ImageRef = &img.ID, img.Reference
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return err
	case !project.AllowCustomImages:
		return models.Invalid("image", "%q is not in the image catalog, and project %s allows only catalog images", image, project.Name)
	}
	ref, err := images.ParseReference(image)
	if err != nil {
		return models.Invalid("image", "%v", err)
	}
	j.ImageRef = ref.String()
	return nil
}

// SpecOf is the spec that submits a job like j again, for re-running and cloning it:
// its catalog image by name (else its image reference), command, environment,
// resources and policy. Secret variables come without their values (SecretsOf fills
// them, for j's submitter).
func (s *Service) SpecOf(ctx context.Context, j *models.Job) (Spec, error) {
	p, err := s.store.ProjectByID(ctx, j.ProjectID)
	if err != nil {
		return Spec{}, fmt.Errorf("spec of job %d: %w", j.ID, err)
	}
	preemptible := j.Preemptible
	spec := Spec{
		Project: p.Name, Name: j.Name, Kind: j.Kind, Image: j.ImageRef, PriorityClass: j.PriorityClass, Preemptible: &preemptible, Spot: j.Spot,
		Replicas: j.Replicas, MaxRetries: j.MaxRetries, ExpectedRunSec: j.ExpectedRunSec, SecretsOf: j.ID,
		Resources: Resources{
			GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUMemoryMiB: j.GPUMemoryMiB, GPUModel: j.GPUModel,
			MIGProfile: j.MIGProfile, NVLink: j.NVLink, CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, ScratchMiB: j.ScratchMiB,
		},
	}
	if j.ImageID != nil {
		img, err := s.store.ImageByID(ctx, *j.ImageID)
		if err != nil {
			return Spec{}, fmt.Errorf("spec of job %d: %w", j.ID, err)
		}
		spec.Image = img.Name
	}
	if err := json.Unmarshal([]byte(j.Command), &spec.Command); err != nil {
		return Spec{}, fmt.Errorf("spec of job %d: command: %w", j.ID, err)
	}
	var plain map[string]string
	if j.Env != "" {
		if err := json.Unmarshal([]byte(j.Env), &plain); err != nil {
			return Spec{}, fmt.Errorf("spec of job %d: env: %w", j.ID, err)
		}
	}
	secret, err := s.store.JobSecretEnvNames(ctx, j.ID)
	if err != nil {
		return Spec{}, fmt.Errorf("spec of job %d: %w", j.ID, err)
	}
	if len(plain)+len(secret) > 0 {
		spec.Env = make(map[string]EnvVar, len(plain)+len(secret))
	}
	for k, v := range plain {
		ev := Plain(v)
		if SecretName(k) {
			// Stored in the open: its name looks secret, but the submitter said it is not.
			no := false
			ev.Secret = &no
		}
		spec.Env[k] = ev
	}
	for _, k := range secret {
		spec.Env[k] = Secret("")
	}
	return spec, nil
}

// SecretEnvNames returns the names of a job's secret variables, sorted; their values
// stay where only the job's leases read them.
func (s *Service) SecretEnvNames(ctx context.Context, id int64) ([]string, error) {
	return s.store.JobSecretEnvNames(ctx, id)
}

// Job returns the job with id.
func (s *Service) Job(ctx context.Context, id int64) (*models.Job, error) {
	return s.store.JobByID(ctx, id)
}

// Events returns the state changes of a job, oldest first.
func (s *Service) Events(ctx context.Context, id int64) ([]models.JobEvent, error) {
	return s.store.JobEvents(ctx, id)
}

// Allocations returns where each attempt of a job ran.
func (s *Service) Allocations(ctx context.Context, id int64) ([]models.Allocation, error) {
	return s.store.AllocationsOfJob(ctx, id)
}

// Activity returns a text that changes whenever the job's events, allocations or
// charges, or the metering watermark, do (store.JobActivity).
func (s *Service) Activity(ctx context.Context, id int64) (string, error) {
	return s.store.JobActivity(ctx, id)
}

// logPage is how many chunks one read of a job's output takes: 4 MiB of what agents
// ship, 16 MiB at most, whatever the output's size.
const logPage = 64

// LogChunks returns a page of the output of one attempt of a job after chunk afterID
// and up to chunk upToID (0: the last), in arrival order; stream "" gives both
// streams. An empty page is the end.
func (s *Service) LogChunks(ctx context.Context, jobID int64, attempt int, stream string, afterID, upToID int64) ([]models.JobLogChunk, error) {
	return s.store.LogChunks(ctx, store.LogFilter{JobID: jobID, Attempt: attempt, Stream: stream, AfterID: afterID, UpToID: upToID, Limit: logPage})
}

// LogTailFrom returns the chunk after which the last maxBytes (in maxChunks at most)
// of the output of one attempt of a job after chunk afterID begin, and the bytes before.
func (s *Service) LogTailFrom(ctx context.Context, jobID int64, attempt int, stream string, afterID, maxBytes int64, maxChunks int) (from, skipped int64, err error) {
	return s.store.LogTailFrom(ctx, store.LogFilter{JobID: jobID, Attempt: attempt, Stream: stream, AfterID: afterID}, maxBytes, maxChunks)
}

// LogExtent returns the last chunk of the output of one attempt of a job after chunk
// afterID (0: none) and the bytes up to it.
func (s *Service) LogExtent(ctx context.Context, jobID int64, attempt int, stream string, afterID int64) (lastID, bytes int64, err error) {
	return s.store.LogExtent(ctx, store.LogFilter{JobID: jobID, Attempt: attempt, Stream: stream, AfterID: afterID})
}
