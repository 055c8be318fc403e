package jobs_test

import (
	"context"
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

// SpecOf gives back what was submitted, so a clone is the same job, and a re-run is a
// new job like the old one whose audit entry names it.
func TestSpecOfAndResubmit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		al := audit.New(st, time.Now)
		svc := jobs.New(st, al, noKick{}, nil)
		user := &models.User{Username: "ada"}
		must(t, st.CreateUser(ctx, user))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		must(t, st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "detect", AllowCustomImages: true}))
		no := false
		for _, in := range []jobs.Spec{
			{Project: "detect", Name: "train", Kind: models.KindInference, Image: "plain-command", Command: []string{"python", "train.py", "--lr", "0.1"}, Env: map[string]jobs.EnvVar{"EPOCHS": jobs.Plain("3")},
				Resources:     jobs.Resources{GPUs: 1, GPUMilli: 250, GPUMemoryMiB: 8192, GPUModel: "L4-24GB", CPUMilli: 2000, MemoryMiB: 8192, ScratchMiB: 1024},
				PriorityClass: "test", Preemptible: &no, Spot: true, Replicas: 1, MaxRetries: 2, ExpectedRunSec: 5400},
			{Project: "detect", Name: "custom", Image: "docker.io/me/train:1", Command: []string{"./run"}, Resources: jobs.Resources{GPUs: 2}},
		} {
			j, err := svc.Submit(ctx, user, in)
			must(t, err)
			got, err := svc.SpecOf(ctx, j)
			must(t, err)
			want := in
			must(t, want.Validate()) // the defaults Submit filled in
			want.SecretsOf = j.ID
			if want.Preemptible == nil {
				yes := j.Preemptible
				want.Preemptible = &yes
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("SpecOf(%s) =\n%+v\nwant\n%+v", in.Name, got, want)
			}
			again, err := svc.Resubmit(ctx, user, j)
			must(t, err)
			if again.ID == j.ID || again.State != models.JobQueued || again.Command != j.Command || again.GPUMilli != j.GPUMilli || again.ImageRef != j.ImageRef || again.ExpectedRunSec != j.ExpectedRunSec {
				t.Fatalf("re-run of %+v = %+v", j, again)
			}
		}
		evs, err := st.AuditEventsAfter(ctx, store.AuditFilter{Action: "job.submitted"}, 0, 10)
		must(t, err)
		if len(evs) != 4 || !strings.Contains(evs[1].Detail, `"rerun_of":`) || strings.Contains(evs[0].Detail, "rerun_of") {
			t.Fatalf("audit of submissions and re-runs = %+v", evs)
		}
	})
}
