package handlers

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
)

// splitCommand reads a command line as a shell would, and joinCommand writes one back.
func TestCommandLines(t *testing.T) {
	for line, want := range map[string][]string{
		`python train.py --lr 0.1`:          {"python", "train.py", "--lr", "0.1"},
		`  sh -c 'echo "hi there"; exit 3'`: {"sh", "-c", `echo "hi there"; exit 3`},
		`a "b \"c\" \d" e\ f ''`:            {"a", `b "c" \d`, "e f", ""},
		`'it'\''s'`:                         {"it's"},
		"":                                  nil,
	} {
		got, err := splitCommand(line)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("split %q = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, line := range []string{`echo 'open`, `echo "open`} {
		var fe *models.FieldError
		if _, err := splitCommand(line); !errors.As(err, &fe) || fe.Field != "command" {
			t.Errorf("split %q: %v, want a command error", line, err)
		}
	}
}

// Any form binds to a spec or to an error naming a field of the form, without a panic;
// a command that binds is written back to the same arguments.
func FuzzJobForm(f *testing.F) {
	for _, seed := range []string{
		"project=default&name=train&command=python+train.py&gpus=1&gpu_share=0.25&memory_gib=8&expected_run=1h",
		"command=sh+-c+%27echo+hi%27&env=A%3D1%0AB%3D2&replicas=2&retries=3&preemptible=no&spot=on",
		"gpus=-1", "gpu_share=NaN", "memory_gib=1e308", "cpu_cores=Inf", "expected_run=-5m", "env=%3D%3D%0A%3D",
		"command=%22%5C", "command=%27", "preemptible=maybe", "replicas=99999999999999999999", "name=%ff%fe",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		form := jobFormOf(v)
		spec, err := specOfForm(form)
		if err == nil {
			err = spec.Validate()
		}
		if err != nil {
			var fe *models.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%q: error is not a FieldError: %v", body, err)
			}
			field, msg := formError(form, fe)
			if field == "" || !strings.HasPrefix(msg, jobFormLabels[field]+": ") {
				t.Fatalf("%q: error %v is shown as %q on field %q", body, fe, msg, field)
			}
			return
		}
		for _, a := range spec.Command {
			if !utf8.ValidString(a) {
				return // joinCommand writes bytes; the spec refuses them anyway
			}
		}
		again, err := splitCommand(joinCommand(spec.Command))
		if err != nil || !slices.Equal(again, spec.Command) {
			t.Fatalf("command %q written as %q reads back as %q, %v", spec.Command, joinCommand(spec.Command), again, err)
		}
	})
}
