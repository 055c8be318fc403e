package jobs

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
)

// Limits of a job spec.
const (
	MaxNameLen      = 100
	MaxArgs         = 256
	MaxCommandBytes = 64 << 10
	MaxEnvVars      = 256
	MaxEnvBytes     = 64 << 10
	MaxGPUs         = 64
	MaxReplicas     = 64
	MaxRetries      = 10
	MaxExpectedRun  = 90 * 24 * 3600 // seconds
)

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	migRE     = regexp.MustCompile(`^[0-9]+g\.[0-9]+gb$`)
	modelRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._|-]*$`)
)

// reservedEnv are set by the agent for every job; a job cannot override them.
var reservedEnv = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}

// Validate checks the spec on its own (what needs the database is checked at
// submission) and fills defaults. The first problem is a *models.FieldError.
func (s *Spec) Validate() error {
	if s.Project == "" {
		return models.Invalid("project", "is required: the name of a project you are a member of")
	}
	if err := text("name", s.Name, MaxNameLen); err != nil {
		return err
	}
	if err := s.validCommand(); err != nil {
		return err
	}
	if err := s.validEnv(); err != nil {
		return err
	}
	if err := s.Resources.validate(); err != nil {
		return err
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.Replicas < 1 || s.Replicas > MaxReplicas {
		return models.Invalid("replicas", "must be between 1 and %d", MaxReplicas)
	}
	if s.MaxRetries < 0 || s.MaxRetries > MaxRetries {
		return models.Invalid("max_retries", "must be between 0 and %d", MaxRetries)
	}
	if s.ExpectedRunSec < 0 || s.ExpectedRunSec > MaxExpectedRun {
		return models.Invalid("expected_run_sec", "must be between 0 (unknown) and %d seconds (90 days)", MaxExpectedRun)
	}
	switch s.Kind {
	case "", models.KindTraining, models.KindInference, models.KindBatch:
	default:
		return models.Invalid("kind", "%q is not a kind of job: training, inference or batch", s.Kind)
	}
	if s.PriorityClass == "" {
		s.PriorityClass = "research"
	}
	return text("priority_class", s.PriorityClass, 64)
}

func (s *Spec) validCommand() error {
	if len(s.Command) == 0 {
		return models.Invalid("command", `is required: the program and its arguments, e.g. ["python", "train.py"]`)
	}
	if len(s.Command) > MaxArgs {
		return models.Invalid("command", "has %d arguments; at most %d", len(s.Command), MaxArgs)
	}
	total := 0
	for i, arg := range s.Command {
		total += len(arg)
		if !utf8.ValidString(arg) || strings.ContainsRune(arg, 0) {
			return models.Invalid(fmt.Sprintf("command[%d]", i), "must be UTF-8 text without NUL bytes")
		}
	}
	if s.Command[0] == "" {
		return models.Invalid("command[0]", "is empty: name the program to run")
	}
	if total > MaxCommandBytes {
		return models.Invalid("command", "is %d bytes long; at most %d (put long inputs in a file)", total, MaxCommandBytes)
	}
	return nil
}

func (s *Spec) validEnv() error {
	if len(s.Env) > MaxEnvVars {
		return models.Invalid("env", "has %d variables; at most %d", len(s.Env), MaxEnvVars)
	}
	total := 0
	// In name order, so that a spec with several bad variables is always told of the same one.
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v := s.Env[k].Value
		total += len(k) + len(v)
		if err := CheckEnvName("env", k); err != nil {
			return err
		}
		if strings.HasPrefix(k, "GANTRY_") {
			return models.Invalid("env."+k, "GANTRY_ variables are set by Gantry")
		}
		for _, r := range reservedEnv {
			if k == r {
				return models.Invalid("env."+k, "is set by Gantry to the GPUs the job is given")
			}
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return models.Invalid("env."+k, "must be UTF-8 text without NUL bytes")
		}
	}
	if total > MaxEnvBytes {
		return models.Invalid("env", "is %d bytes; at most %d", total, MaxEnvBytes)
	}
	return nil
}

// CheckEnvName refuses, as field, a name that an environment variable cannot have. The
// submit form checks each of its two fields with it, so that a bad name is blamed on the
// field it was typed in (both end up in one env map).
func CheckEnvName(field, name string) error {
	if !envNameRE.MatchString(name) {
		return models.Invalid(field, "%q is not a variable name: letters, digits and '_', not starting with a digit (no '=')", name)
	}
	return nil
}

func (r *Resources) validate() error {
	switch {
	case r.GPUs < 0 || r.GPUs > MaxGPUs:
		return models.Invalid("resources.gpus", "must be between 0 and %d", MaxGPUs)
	case r.GPUMilli < 0 || r.GPUMilli > 999:
		return models.Invalid("resources.gpu_milli", "must be between 1 and 999 for a share of one GPU, or 0 for whole GPUs")
	case r.GPUMilli > 0 && r.GPUs > 1:
		return models.Invalid("resources.gpu_milli", "a share is of one GPU: set gpus to 1 (or 0)")
	case r.GPUMemoryMiB < 0:
		return models.Invalid("resources.gpu_memory_mib", "cannot be negative")
	case r.CPUMilli < 0:
		return models.Invalid("resources.cpu_milli", "cannot be negative")
	case r.MemoryMiB < 0:
		return models.Invalid("resources.memory_mib", "cannot be negative")
	case r.ScratchMiB < 0:
		return models.Invalid("resources.scratch_mib", "cannot be negative")
	case r.GPUModel != "" && (len(r.GPUModel) > 64 || !modelRE.MatchString(r.GPUModel)):
		return models.Invalid("resources.gpu_model", "must be a GPU model such as A100-80GB, or several joined by |")
	case r.MIGProfile != "" && !migRE.MatchString(r.MIGProfile):
		return models.Invalid("resources.mig_profile", "must be a MIG profile such as 3g.40gb")
	case r.MIGProfile != "" && (r.GPUMilli > 0 || r.GPUs > 1):
		return models.Invalid("resources.mig_profile", "a MIG profile is one slice: leave gpu_milli at 0 and gpus at 0 or 1")
	case r.NVLink && (r.GPUs < 2 || r.GPUMilli > 0 || r.MIGProfile != ""):
		return models.Invalid("resources.nvlink", "NVLink joins two or more whole GPUs: ask for gpus = 2 or more, without gpu_milli or mig_profile")
	}
	if r.GPUMilli > 0 || r.MIGProfile != "" {
		r.GPUs = 1
	}
	return nil
}

// text checks a required one-line field of at most max bytes.
func text(field, v string, max int) error {
	switch {
	case v == "":
		return models.Invalid(field, "is required")
	case len(v) > max:
		return models.Invalid(field, "must be at most %d characters", max)
	case !utf8.ValidString(v) || strings.ContainsAny(v, "\x00\n\r"):
		return models.Invalid(field, "must be one line of UTF-8 text")
	}
	return nil
}
