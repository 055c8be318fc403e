package strictjson_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// secret reads only a string, refusing anything else in its own words, as an
// UnmarshalJSON of a spec's part does.
type secret string

func (s *secret) UnmarshalJSON(b []byte) error {
	var v string
	if b[0] != '"' || json.Unmarshal(b, &v) != nil {
		return models.Invalid("secret", "is a string")
	}
	*s = secret(v)
	return nil
}

type inner struct {
	GPUs  int    `json:"gpus"`
	Model string `json:"gpu_model"`
}

type Embedded struct {
	Tag string `json:"tag"`
}

type body struct {
	Embedded
	Project string            `json:"project"`
	Command []string          `json:"command"`
	Env     map[string]secret `json:"env"`
	Res     inner             `json:"resources"`
	When    *time.Time        `json:"when"`
	Flag    *bool             `json:"flag,omitempty"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Hidden  string            `json:"-"`
}

// A wrong value inside an array, a map or an object is named by its path, where
// encoding/json blames the array or the map, or says nothing of where, and so is a key
// that encoding/json would take for a field written in other letter case; what fits is
// left alone (a map's keys are any), and so is a body that is not JSON and a key that is
// no field's name at all, which the decoder refuses.
func TestCheckNamesTheValueAtFault(t *testing.T) {
	for _, tc := range []struct{ body, field, message string }{
		{`{"command": ["a", 1]}`, "command[1]", "must be a string, not number"},
		{`{"command": ["a", ["b"]]}`, "command[1]", "must be a string, not array"},
		{`{"command": "a b"}`, "command", "must be an array, not string"},
		{`{"env": {"A": "x", "B": 1}}`, "env.B", "is a string"},
		{`{"env": {"A": null}}`, "env.A", "is a string"},
		{`{"env": []}`, "env", "must be an object, not array"},
		{`{"resources": {"gpus": "2"}}`, "resources.gpus", "must be an integer, not string"},
		{`{"resources": {"gpus": 1.5}}`, "resources.gpus", "must be an integer, not number 1.5"},
		{`{"resources": []}`, "resources", "must be an object, not array"},
		{`{"when": "yesterday"}`, "when", `parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{`{"flag": "yes"}`, "flag", "must be true or false, not string"},
		{`{"tag": 1}`, "tag", "must be a string, not number"},
		{`[]`, "body", "must be an object, not array"},
		{`{"Project": "p"}`, "Project", `is not a field: keys are matched exactly, write "project"`},
		{`{"resources": {"GPUs": 1}}`, "resources.GPUs", `is not a field: keys are matched exactly, write "gpus"`},
		{`{"TAG": "x"}`, "TAG", `is not a field: keys are matched exactly, write "tag"`},
		{`{"hidden": "x", "Hidden": "y", "env": {"a": "x", "A": "y"}}`, "", ""},
		{`{"project": "p", "unknown": 1}`, "", ""},
		{`{"project": "p", "flag": null, "when": null, "env": null, "raw": [1, {}], "any": {"x": [1]}, "resources": {"gpus": 2}}`, "", ""},
		{`{"project": `, "", ""},
	} {
		err := strictjson.Check([]byte(tc.body), &body{})
		var fe *models.FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want nothing", tc.body, err)
		case tc.field == "":
		case !errors.As(err, &fe) || fe.Field != tc.field || fe.Message != tc.message:
			t.Errorf("%s: %v, want %s: %s", tc.body, err, tc.field, tc.message)
		}
	}
}
