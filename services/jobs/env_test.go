package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestSecretNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"HF_TOKEN": true, "WANDB_API_KEY": true, "DB_PASSWORD": true, "AWS_SECRET_ACCESS_KEY": true, "my_secret": true, "SECRETS": true,
		"EPOCHS": false, "TOKENIZER": false, "KEYS_DIR": false, "PASSWORD_HINT": false, "TOKEN": false,
	} {
		if got := jobs.SecretName(name); got != want {
			t.Errorf("SecretName(%s) = %v, want %v", name, got, want)
		}
	}
}

// A spec's env values are strings or {"value", "secret"} objects; anything else is
// refused naming env.
func TestParseSecretEnv(t *testing.T) {
	t.Parallel()
	s, err := jobs.Parse(strings.NewReader(`{"project": "p", "name": "n", "command": ["a"],
		"env": {"EPOCHS": "3", "DB_URL": {"value": "postgres://u:pw@db/x", "secret": true}, "API_KEY": {"value": "k", "secret": false}, "HF_TOKEN": "hf_1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"EPOCHS": false, "DB_URL": true, "API_KEY": false, "HF_TOKEN": true} {
		if got := s.Env[name].IsSecret(name); got != want {
			t.Errorf("%s secret = %v, want %v", name, got, want)
		}
	}
	if s.Env["DB_URL"].Value != "postgres://u:pw@db/x" || s.Env["HF_TOKEN"].Value != "hf_1" {
		t.Errorf("values = %+v", s.Env)
	}
	for _, body := range []string{
		`{"env": {"A": {"secret": true}}}`,
		`{"env": {"A": {"value": "x", "hidden": true}}}`,
		`{"env": {"A": 3}}`,
	} {
		_, err := jobs.Parse(strings.NewReader(body))
		var fe *models.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "env") {
			t.Errorf("Parse(%s) = %v, want a FieldError on env", body, err)
		}
	}
}

// Secret values are stored apart from the job: its row, SpecOf and the audit log never
// hold them; a re-run or clone by its submitter keeps them, anyone else must give
// their own; a template refuses them.
func TestSecretEnvStorage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		al := audit.New(st, time.Now)
		svc := jobs.New(st, al, noKick{}, nil)
		ada, bob := &models.User{Username: "ada"}, &models.User{Username: "bob"}
		must(t, st.CreateUser(ctx, ada))
		must(t, st.CreateUser(ctx, bob))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		project := &models.Project{TeamID: team.ID, Name: "detect"}
		must(t, st.CreateProject(ctx, project))
		az := authz.New(st, al)
		must(t, az.SetProjectRole(ctx, bob, project, models.RoleMember))
		const dbURL, hfToken = "postgres://u:pw-4471@db/x", "hf_s3cr3t-9123"
		no := false
		in := jobs.Spec{Project: "detect", Name: "train", Command: []string{"python", "train.py"}, Env: map[string]jobs.EnvVar{
			"EPOCHS": jobs.Plain("3"), "DB_URL": jobs.Secret(dbURL), "HF_TOKEN": jobs.Plain(hfToken), "PUBLIC_KEY": {Value: "ssh-ed25519 AAA", Secret: &no},
		}}
		j, err := svc.Submit(ctx, ada, in)
		must(t, err)
		row, err := st.JobByID(ctx, j.ID)
		must(t, err)
		if strings.Contains(row.Env, dbURL) || strings.Contains(row.Env, hfToken) || !strings.Contains(row.Env, `"EPOCHS":"3"`) || !strings.Contains(row.Env, "PUBLIC_KEY") {
			t.Errorf("the job's env column = %s, want only its plain variables", row.Env)
		}
		kept, err := st.JobSecretEnv(ctx, j.ID)
		must(t, err)
		if len(kept) != 2 || kept["DB_URL"] != dbURL || kept["HF_TOKEN"] != hfToken {
			t.Errorf("secret env stored = %v", kept)
		}
		if names, err := svc.SecretEnvNames(ctx, j.ID); err != nil || strings.Join(names, ",") != "DB_URL,HF_TOKEN" {
			t.Errorf("secret names = %v, %v", names, err)
		}
		spec, err := svc.SpecOf(ctx, j)
		must(t, err)
		if v := spec.Env["DB_URL"]; v.Value != "" || !v.IsSecret("DB_URL") {
			t.Errorf("SpecOf gives DB_URL as %+v, want secret without its value", v)
		}
		if v := spec.Env["PUBLIC_KEY"]; v.Value != "ssh-ed25519 AAA" || v.IsSecret("PUBLIC_KEY") {
			t.Errorf("SpecOf gives PUBLIC_KEY as %+v, want it plain as marked", v)
		}

		again, err := svc.Resubmit(ctx, ada, j)
		must(t, err)
		if got, _ := st.JobSecretEnv(ctx, again.ID); got["DB_URL"] != dbURL || got["HF_TOKEN"] != hfToken || again.Env != row.Env {
			t.Errorf("a re-run by its submitter kept %v and env %s", got, again.Env)
		}
		clone := spec
		clone.Env = map[string]jobs.EnvVar{"EPOCHS": jobs.Plain("4"), "DB_URL": jobs.Secret(""), "HF_TOKEN": jobs.Secret("hf_new")}
		cloned, err := svc.Submit(ctx, ada, clone)
		must(t, err)
		if got, _ := st.JobSecretEnv(ctx, cloned.ID); got["DB_URL"] != dbURL || got["HF_TOKEN"] != "hf_new" {
			t.Errorf("a clone kept %v, want the old DB_URL and the new HF_TOKEN", got)
		}
		_, err = svc.Resubmit(ctx, bob, j)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != "env.DB_URL" || !strings.Contains(fe.Message, "enter the value yourself") {
			t.Errorf("a re-run by another member = %v, want env.DB_URL refused", err)
		}
		_, err = svc.SaveTemplate(ctx, ada, project, "nightly", jobs.Spec{Name: "n", Command: []string{"a"}, Env: map[string]jobs.EnvVar{"HF_TOKEN": jobs.Plain(hfToken)}})
		if !errors.As(err, &fe) || fe.Field != "spec.env.HF_TOKEN" {
			t.Errorf("a template with a secret = %v, want spec.env.HF_TOKEN refused", err)
		}
		// A template saved from the job's spec (its secrets left out) and deleted: both
		// events carry the spec.
		saved := spec
		saved.Project, saved.SecretsOf = "", 0
		saved.Env = maps.Clone(spec.Env)
		delete(saved.Env, "DB_URL")
		delete(saved.Env, "HF_TOKEN")
		_, err = svc.SaveTemplate(ctx, ada, project, "nightly", saved)
		must(t, err)
		must(t, svc.DeleteTemplate(ctx, ada, false, project, "nightly"))
		events, err := st.AuditEventsAfter(ctx, store.AuditFilter{}, 0, 1000)
		must(t, err)
		actions := map[string]bool{}
		for _, e := range events {
			actions[e.Action] = true
			if strings.Contains(e.Detail, dbURL) || strings.Contains(e.Detail, hfToken) || strings.Contains(e.Detail, "hf_new") {
				t.Errorf("audit event %s holds a secret value: %s", e.Action, e.Detail)
			}
		}
		if !actions["job.submitted"] || !actions["job_template.saved"] || !actions["job_template.deleted"] {
			t.Errorf("audited %v, want submissions and the template's save and delete", actions)
		}
	})
}

// Jobs submitted before migration 0019 kept secret values in jobs.env. The migration
// after it moves those that a submission now would keep secret (SecretName: their spec
// could not say) to the secret store, and leaves jobs submitted since alone: a name like
// that in their env was said not to be secret.
func TestMigrationMovesOldJobsSecrets(t *testing.T) {
	t.Parallel()
	version := migrationVersion(t, "old_job_secret_env")
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ada := &models.User{Username: "ada"}
			must(t, st.CreateUser(ctx, ada))
			team := &models.Team{Name: "vision"}
			must(t, st.CreateTeam(ctx, team))
			project := &models.Project{TeamID: team.ID, Name: "detect"}
			must(t, st.CreateProject(ctx, project))
			env := map[string]string{}
			for _, name := range []string{"HF_TOKEN", "wandb_api_key", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "my_secret", "SECRETS",
				"EPOCHS", "TOKENIZER", "KEYS_DIR", "PASSWORD_HINT", "TOKEN", "NOTE"} {
				env[name] = "v-" + name + ` "quoted" <&>`
			}
			plain, secret := map[string]string{}, map[string]string{}
			for k, v := range env {
				if jobs.SecretName(k) {
					secret[k] = v
				} else {
					plain[k] = v
				}
			}
			encode := func(m map[string]string) string {
				b, err := json.Marshal(m)
				must(t, err)
				return string(b)
			}
			rows := map[string]*models.Job{
				"old": {Env: encode(env)}, "only-secret": {Env: `{"HF_TOKEN":"hf_only"}`}, "no-env": {},
				"old-plain": {Env: `{"EPOCHS":"3"}`}, "recent": {Env: `{"PUBLIC_KEY":"ssh-ed25519 AAA"}`},
			}
			for name, j := range rows {
				j.Name, j.ProjectID, j.UserID, j.Command, j.PriorityClass = name, project.ID, ada.ID, `["true"]`, "research"
				must(t, st.CreateJob(ctx, j, "user:ada"))
			}
			storetest.Exec(t, cfg, "UPDATE jobs SET created_at = '2020-01-01 00:00:00+00:00' WHERE name <> 'recent'")
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version))
			if applied, err := st.Migrate(ctx); err != nil || len(applied) != 1 || applied[0] != version {
				t.Fatalf("migrate applied %v, %v; want %d", applied, err, version)
			}
			for name, want := range map[string]struct {
				env     string
				secrets map[string]string
			}{
				"old": {encode(plain), secret}, "only-secret": {"", map[string]string{"HF_TOKEN": "hf_only"}}, "no-env": {"", map[string]string{}},
				"old-plain": {`{"EPOCHS":"3"}`, map[string]string{}}, "recent": {`{"PUBLIC_KEY":"ssh-ed25519 AAA"}`, map[string]string{}},
			} {
				j, err := st.JobByID(ctx, rows[name].ID)
				must(t, err)
				got, err := st.JobSecretEnv(ctx, j.ID)
				must(t, err)
				var gotEnv, wantEnv map[string]string
				if want.env != "" {
					must(t, json.Unmarshal([]byte(j.Env), &gotEnv))
					must(t, json.Unmarshal([]byte(want.env), &wantEnv))
				}
				if (j.Env == "") != (want.env == "") || !maps.Equal(gotEnv, wantEnv) || !maps.Equal(got, want.secrets) {
					t.Errorf("job %s: env %s and secrets %v, want env %s and secrets %v", name, j.Env, got, want.env, want.secrets)
				}
			}
		})
	}
}

// migrationVersion is the number of the migration called name.
func migrationVersion(t *testing.T, name string) int {
	t.Helper()
	all, err := migrations.All()
	must(t, err)
	for _, m := range all {
		if m.Name == name {
			return m.Version
		}
	}
	t.Fatalf("no migration %s", name)
	return 0
}

// Templates saved before migration 0019 kept secret values in their spec, which everyone
// in the project reads. The migration drops the values of the names the secret rule
// matches (SecretName) and keeps the names as secrets left empty, as a job's spec shows
// its secrets, so the form filled in from the template asks for them. A name like that
// marked "secret": false (saved since 0019) and templates without such a name are left
// as they were, byte for byte.
func TestMigrationClearsOldTemplatesSecrets(t *testing.T) {
	t.Parallel()
	version := migrationVersion(t, "old_template_secret_env")
	no := false
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			svc := jobs.New(st, audit.New(st, time.Now), noKick{}, nil)
			ada := &models.User{Username: "ada"}
			must(t, st.CreateUser(ctx, ada))
			team := &models.Team{Name: "vision"}
			must(t, st.CreateTeam(ctx, team))
			project := &models.Project{TeamID: team.ID, Name: "detect"}
			must(t, st.CreateProject(ctx, project))
			env := map[string]string{}
			for _, name := range []string{"HF_TOKEN", "wandb_api_key", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "my_secret", "SECRETS",
				"EPOCHS", "TOKENIZER", "KEYS_DIR", "PASSWORD_HINT", "TOKEN", "NOTE"} {
				env[name] = "v-" + name + ` "quoted" <&>`
			}
			// As a template was saved before 0019: every value a string.
			oldSpec := jobs.Spec{Project: "detect", Name: "train", Command: []string{"python", "train.py"},
				Resources: jobs.Resources{GPUs: 1, CPUMilli: 2000, MemoryMiB: 8192}, PriorityClass: "research", Replicas: 1, MaxRetries: 2}
			oldSpec.Env = map[string]jobs.EnvVar{}
			for k, v := range env {
				oldSpec.Env[k] = jobs.Plain(v)
			}
			body, err := json.Marshal(oldSpec)
			must(t, err)
			specs := map[string]string{
				"old":         string(body),
				"only-secret": `{"project":"detect","name":"n","command":["a"],"env":{"HF_TOKEN":"hf_only"},"resources":{"gpus":0}}`,
				"mixed":       `{"project":"detect","name":"n","command":["a"],"env":{"HF_TOKEN":"hf_mixed","PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false}},"resources":{"gpus":0}}`,
				"marked":      `{"project":"detect","name":"n","command":["a"],"env":{"PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false},"EPOCHS":"3"},"resources":{"gpus":0}}`,
				"plain":       `{"project":"detect","name":"n","command":["a"],"env":{"EPOCHS":"3"},"resources":{"gpus":0}}`,
				"no-env":      `{"project":"detect","name":"n","command":["a"],"resources":{"gpus":0}}`,
			}
			for name, spec := range specs {
				must(t, st.CreateJobTemplate(ctx, &models.JobTemplate{ProjectID: project.ID, Name: name, Spec: spec, CreatedByID: ada.ID}))
			}
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version))
			if applied, err := st.Migrate(ctx); err != nil || len(applied) != 1 || applied[0] != version {
				t.Fatalf("migrate applied %v, %v; want %d", applied, err, version)
			}

			for _, name := range []string{"marked", "plain", "no-env"} {
				if row, err := st.JobTemplateByName(ctx, project.ID, name); err != nil || row.Spec != specs[name] {
					t.Errorf("template %s = %+v, %v; want it unchanged: %s", name, row, err, specs[name])
				}
			}
			for name, want := range map[string]map[string]jobs.EnvVar{
				"old":         oldSpec.Env,
				"only-secret": {"HF_TOKEN": jobs.Plain("hf_only")},
				"mixed":       {"HF_TOKEN": jobs.Plain("hf_mixed"), "PUBLIC_KEY": {Value: "ssh-ed25519 AAA", Secret: &no}},
			} {
				row, err := st.JobTemplateByName(ctx, project.ID, name)
				must(t, err)
				got, err := svc.TemplateByName(ctx, project, name)
				must(t, err)
				if len(got.Spec.Env) != len(want) {
					t.Errorf("template %s has env %v, want the names of %v", name, got.Spec.Env, want)
				}
				for k, v := range want {
					g, ok := got.Spec.Env[k]
					switch {
					case !ok:
						t.Errorf("template %s lost %s", name, k)
					case v.Secret == nil && jobs.SecretName(k) && (g.Value != "" || !g.IsSecret(k)):
						t.Errorf("template %s keeps %s as %+v, want a secret left empty", name, k, g)
					case v.Secret != nil && (g.Value != v.Value || g.IsSecret(k)):
						t.Errorf("template %s keeps %s as %+v, want %q marked not secret as it was", name, k, g, v.Value)
					case v.Secret == nil && !jobs.SecretName(k) && (g.Value != v.Value || g.Secret != nil):
						t.Errorf("template %s keeps %s as %+v, want %q as it was", name, k, g, v.Value)
					}
					if v.Secret == nil && jobs.SecretName(k) && strings.Contains(row.Spec, v.Value) {
						t.Errorf("template %s still holds the value of %s: %s", name, k, row.Spec)
					}
				}
			}
			got, err := svc.TemplateByName(ctx, project, "old")
			must(t, err)
			got.Spec.Env, oldSpec.Env = nil, nil
			if !reflect.DeepEqual(got.Spec, oldSpec) {
				t.Errorf("template old reads as %+v, want the rest of its spec as it was: %+v", got.Spec, oldSpec)
			}
		})
	}
}
