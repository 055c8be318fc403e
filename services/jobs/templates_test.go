package jobs_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Templates are saved checked as a submission would be, listed by name, renamed and
// deleted by who saved them (or, given anyones, by a project's managers), audited, and
// submit nothing.
func TestJobTemplates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		as := func(u *models.User) context.Context {
			return audit.WithActor(ctx, audit.Actor{Name: u.Username, Type: models.ActorUser})
		}
		svc := jobs.New(st, audit.New(st, time.Now), noKick{}, nil)
		ada, bob := &models.User{Username: "ada"}, &models.User{Username: "bob"}
		must(t, st.CreateUser(ctx, ada))
		must(t, st.CreateUser(ctx, bob))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		p := &models.Project{TeamID: team.ID, Name: "detect"}
		must(t, st.CreateProject(ctx, p))
		other := &models.Project{TeamID: team.ID, Name: "segment"}
		must(t, st.CreateProject(ctx, other))

		spec := jobs.Spec{Name: "train", Command: []string{"python", "train.py"}, Env: map[string]jobs.EnvVar{"EPOCHS": jobs.Plain("3")},
			Resources: jobs.Resources{GPUs: 1, GPUMilli: 250, CPUMilli: 2000, MemoryMiB: 8192}, MaxRetries: 1}
		saved, err := svc.SaveTemplate(as(ada), ada, p, " nightly ", spec)
		must(t, err)
		if saved.Name != "nightly" || saved.CreatedBy != "ada" || saved.Spec.Project != "detect" || saved.Spec.Replicas != 1 || saved.Spec.PriorityClass != "research" {
			t.Fatalf("saved = %+v", saved)
		}
		_, err = svc.SaveTemplate(as(bob), bob, p, "a-first", jobs.Spec{Name: "eval", Command: []string{"./eval"}})
		must(t, err)
		// Another project may use the same name.
		_, err = svc.SaveTemplate(as(bob), bob, other, "nightly", spec)
		must(t, err)

		for _, bad := range []struct {
			name  string
			spec  jobs.Spec
			field string
			says  string
		}{
			{"nightly", spec, "name", `project detect already has a template called "nightly"`},
			{"", spec, "name", "is required"},
			{"a/b", spec, "name", "is not a template name"},
			{strings.Repeat("x", 65), spec, "name", "is not a template name"},
			{"ok", jobs.Spec{Name: "x"}, "spec.command", "is required"},
			{"ok", jobs.Spec{Name: "x", Command: []string{"a"}, Env: map[string]jobs.EnvVar{"A=B": jobs.Plain("1")}}, "spec.env", "is not a variable name"},
			{"ok", jobs.Spec{Name: "x", Command: []string{"a"}, Resources: jobs.Resources{MemoryMiB: -1}}, "spec.resources.memory_mib", "cannot be negative"},
			{"ok", jobs.Spec{Name: "x", Command: []string{"a"}, PriorityClass: "urgent"}, "spec.priority_class", `no priority class "urgent"`},
			{"ok", jobs.Spec{Name: "x", Command: []string{"a"}, Image: "docker.io/me/x:1"}, "spec.image", "allows only catalog images"},
			{"ok", jobs.Spec{Project: "segment", Name: "x", Command: []string{"a"}}, "spec.project", "saved in project detect"},
		} {
			_, err := svc.SaveTemplate(as(ada), ada, p, bad.name, bad.spec)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != bad.field || !strings.Contains(fe.Message, bad.says) {
				t.Errorf("save %q %+v: %v, want %s: …%s…", bad.name, bad.spec, err, bad.field, bad.says)
			}
		}

		list, err := svc.Templates(ctx, p)
		must(t, err)
		if len(list) != 2 || list[0].Name != "a-first" || list[0].CreatedBy != "bob" || list[1].Name != "nightly" {
			t.Fatalf("templates = %+v", list)
		}
		got, err := svc.TemplateByName(ctx, p, "nightly")
		must(t, err)
		if !reflect.DeepEqual(got.Spec, saved.Spec) || got.ID != saved.ID {
			t.Fatalf("template read back = %+v, saved %+v", got.Spec, saved.Spec)
		}
		if _, err := svc.TemplateByName(ctx, p, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a missing template: %v", err)
		}

		// Bob may not change Ada's template, unless he manages the project.
		var ny *jobs.NotYoursError
		if err := svc.RenameTemplate(as(bob), bob, false, p, "nightly", "mine"); !errors.As(err, &ny) || ny.SavedBy != "ada" {
			t.Fatalf("bob renames ada's template: %v", err)
		}
		if err := svc.DeleteTemplate(as(bob), bob, false, p, "nightly"); !errors.As(err, &ny) {
			t.Fatalf("bob deletes ada's template: %v", err)
		}
		var fe *models.FieldError
		if err := svc.RenameTemplate(as(ada), ada, false, p, "nightly", "a-first"); !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(fe.Message, "already has") {
			t.Fatalf("rename onto a taken name: %v", err)
		}
		must(t, svc.RenameTemplate(as(ada), ada, false, p, "nightly", "nightly-2"))
		must(t, svc.RenameTemplate(as(ada), ada, true, p, "a-first", "eval"))
		if err := svc.DeleteTemplate(as(ada), ada, false, p, "nightly"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete under the old name: %v", err)
		}
		must(t, svc.DeleteTemplate(as(bob), bob, true, p, "nightly-2"))
		if list, err = svc.Templates(ctx, p); err != nil || len(list) != 1 || list[0].Name != "eval" || list[0].CreatedBy != "bob" {
			t.Fatalf("templates after rename and delete = %+v %v", list, err)
		}

		if n, err := st.JobCountsByState(ctx); err != nil || len(n) != 0 {
			t.Fatalf("templates submitted jobs: %v %v", n, err)
		}
		evs, err := st.AuditEventsAfter(ctx, store.AuditFilter{}, 0, 100)
		must(t, err)
		var actions []string
		for _, e := range evs {
			if strings.HasPrefix(e.Action, "job_template.") {
				actions = append(actions, e.Action+" by "+e.Actor)
				if e.ProjectID == nil || e.ObjectType != "job_template" || e.ObjectID == "" {
					t.Errorf("audit event %+v names no template or project", e)
				}
			}
		}
		want := []string{"job_template.saved by ada", "job_template.saved by bob", "job_template.saved by bob", "job_template.renamed by ada",
			"job_template.renamed by ada", "job_template.deleted by bob"}
		if !reflect.DeepEqual(actions, want) {
			t.Fatalf("audited %v, want %v", actions, want)
		}
	})
}

// A template body is parsed strictly, and a fault inside its spec is named under spec.
func TestParseTemplate(t *testing.T) {
	t.Parallel()
	name, spec, err := jobs.ParseTemplate(strings.NewReader(`{"name": "nightly", "spec": {"name": "train", "command": ["true"], "resources": {"gpus": 1}}}`))
	if err != nil || name != "nightly" || spec.Name != "train" || spec.Resources.GPUs != 1 {
		t.Fatalf("parse = %q %+v %v", name, spec, err)
	}
	for body, field := range map[string]string{
		`{"name": "n"}`:                                     "spec",
		`{"name": "n", "spec": null}`:                       "spec",
		`{"name": "n", "spec": {"gpus": 1}}`:                "spec.gpus",
		`{"name": "n", "spec": {"command": "true"}}`:        "spec.command",
		`{"name": "n", "spec": []}`:                         "spec",
		`{"name": 5, "spec": {}}`:                           "name",
		`{"name": "n", "spec": {}, "project": "p"}`:         "project",
		`{"name": "n", "spec": {}} {}`:                      "body",
		`not json`:                                          "body",
		`{"name": "n", "spec": {"name": "` + "\xff" + `"}}`: "spec",
	} {
		_, _, err := jobs.ParseTemplate(strings.NewReader(body))
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("parse %s: %v, want a FieldError on %s", body, err, field)
		}
	}
}
