package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
)

// Parse and Validate never panic, and refuse bad input with a FieldError.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		`{"project": "default", "name": "train-1", "command": ["python", "train.py"], "env": {"K": "V"}, "resources": {"gpus": 1, "cpu_milli": 2000, "memory_mib": 8192}}`,
		`{"project": "p", "name": "n", "command": ["a"], "resources": {"gpus": 1, "gpu_milli": 250}, "replicas": 2, "max_retries": 3}`,
		`{"project": "p", "name": "n", "command": ["a"], "resources": {"gpus": 8, "gpu_memory_mib": 79872, "nvlink": true}}`,
		`{"command": "not an array"}`,
		`{"env": {"A=B": "x"}}`,
		`[]`, `null`, `{`, "\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		s, err := Parse(strings.NewReader(body))
		if err == nil {
			err = s.Validate()
		}
		var fe *models.FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error is not a FieldError: %v", err)
		}
		if err == nil && (s.Replicas < 1 || len(s.Command) == 0 || s.PriorityClass == "") {
			t.Fatalf("a valid spec lacks its defaults: %+v", s)
		}
	})
}

// A spec with several bad environment variables is told of the same one every time,
// the first by name, not whichever a map's order gives.
func TestValidateNamesTheFirstBadVariableByName(t *testing.T) {
	for range 20 {
		s := Spec{Project: "p", Name: "n", Command: []string{"a"},
			Env: map[string]EnvVar{"Z=1": Plain("z"), "M=2": Plain("m"), "A=B": Plain("a"), "GANTRY_X": Plain("x")}}
		err := s.Validate()
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != "env" || !strings.Contains(fe.Message, `"A=B"`) {
			t.Fatalf("Validate = %v, want the variable \"A=B\" named", err)
		}
	}
}
