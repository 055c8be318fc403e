package handlers

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
)

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
				return // JoinCommand writes bytes; the spec refuses them anyway
			}
		}
		again, err := jobs.SplitCommand(jobs.JoinCommand(spec.Command))
		if err != nil || !slices.Equal(again, spec.Command) {
			t.Fatalf("command %q written as %q reads back as %q, %v", spec.Command, jobs.JoinCommand(spec.Command), again, err)
		}
	})
}
