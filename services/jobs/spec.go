package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// Spec is a job as a user submits it.
type Spec struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	// Kind is training, inference or batch, or empty for none said. The scheduler
	// steers a kind that names no GPU model towards the models suited to it, and an
	// inference job's page charts the latency and throughput it reports.
	Kind          string            `json:"kind,omitempty"`
	Image         string            `json:"image,omitempty"`
	Command       []string          `json:"command"`
	Env           map[string]EnvVar `json:"env,omitempty"`
	Resources     Resources         `json:"resources"`
	PriorityClass string            `json:"priority_class,omitempty"`
	// Preemptible defaults to what the priority class says.
	Preemptible *bool `json:"preemptible,omitempty"`
	// SecretsOf is the job whose secret values fill the secret variables this spec
	// leaves empty: a clone or re-run of it, by its submitter. Never in JSON: a spec
	// read from a request cannot name it.
	SecretsOf  int64 `json:"-"`
	Spot       bool  `json:"spot,omitempty"`
	Replicas   int   `json:"replicas,omitempty"`
	MaxRetries int   `json:"max_retries,omitempty"`
	// ExpectedRunSec is how long the job expects to run; 0 for unknown. The scheduler
	// lets short jobs backfill holes that longer ones may not.
	ExpectedRunSec int64 `json:"expected_run_sec,omitempty"`
}

// Resources is what one replica asks for.
type Resources struct {
	GPUs         int    `json:"gpus"`
	GPUMilli     int    `json:"gpu_milli"` // a share of one GPU, 1-999; 0 for whole GPUs
	GPUMemoryMiB int64  `json:"gpu_memory_mib"`
	GPUModel     string `json:"gpu_model"`
	MIGProfile   string `json:"mig_profile"`
	// NVLink asks that the whole GPUs (two or more) be joined by NVLink, each to every other.
	NVLink     bool  `json:"nvlink,omitempty"`
	CPUMilli   int64 `json:"cpu_milli"`
	MemoryMiB  int64 `json:"memory_mib"`
	ScratchMiB int64 `json:"scratch_mib"`
}

// MaxSpecBytes bounds a job spec body.
const MaxSpecBytes = 1 << 20

// Parse decodes a JSON job spec strictly: unknown fields, wrong types and trailing
// data are refused with a *models.FieldError naming the field.
func Parse(r io.Reader) (Spec, error) {
	var s Spec
	body, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return s, fmt.Errorf("read job spec: %w", err)
	}
	if len(body) > MaxSpecBytes {
		return s, models.Invalid("body", "is over %d bytes", MaxSpecBytes)
	}
	// encoding/json would quietly turn invalid UTF-8 into U+FFFD.
	if !utf8.Valid(body) {
		return s, models.Invalid("body", "is not valid UTF-8 (at byte %d)", firstInvalid(body))
	}
	if err := strictjson.Check(body, &s); err != nil {
		return s, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, decodeError(err)
	}
	if dec.More() {
		return s, models.Invalid("body", "holds more than one JSON object")
	}
	return s, nil
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// decodeError names the field that a JSON decoding error is about.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var fe *models.FieldError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return models.Invalid(field, "must be %s, not %s", strictjson.Kind(te.Type), te.Value)
	case errors.As(err, &se):
		return models.Invalid("body", "is not valid JSON (at byte %d): %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return models.Invalid("body", "is empty: send a JSON job spec")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return models.Invalid(strings.Trim(f, `"`), "is not a field of a job spec")
	}
	return models.Invalid("body", "is not a valid job spec: %v", err)
}
