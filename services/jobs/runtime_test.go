package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Submission refuses, naming the image field and storing nothing, a job that names a
// container image where every node runs plain commands; a project's default image
// counts as the job's. Once a podman node joins, the same jobs are taken.
func TestSubmitRefusesAnImageNoNodeRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		al := audit.New(st, time.Now)
		sched, err := scheduler.New(scheduler.DefaultConfig())
		must(t, err)
		d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: al, Now: time.Now,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dispatch.DefaultConfig())
		must(t, err)
		svc := jobs.New(st, al, noKick{}, pools.NewFitCheck(st, d))
		user := &models.User{Username: "ada"}
		must(t, st.CreateUser(ctx, user))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		busybox := &models.Image{Name: "busybox", Reference: "docker.io/library/busybox:1.36", Status: models.ImageCertified}
		must(t, st.CreateImage(ctx, busybox))
		must(t, st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "detect", AllowCustomImages: true}))
		must(t, st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "boxed", DefaultImageID: &busybox.ID}))
		spec := func(project, image string) jobs.Spec {
			return jobs.Spec{Project: project, Name: "train", Image: image, Command: []string{"sh", "-c", "true"}, Resources: jobs.Resources{GPUs: 1}}
		}
		images := []jobs.Spec{spec("detect", "busybox"), spec("detect", "ghcr.io/lab/train:2"), spec("boxed", "")}

		join(t, d, st, al, "proc", "1xL4-24GB")
		for _, s := range images {
			_, err := svc.Submit(ctx, user, s)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != "image" || !strings.Contains(fe.Message, "every node runs plain commands only") {
				t.Errorf("submit %s with image %q on a process node: %v; want refused on image", s.Project, s.Image, err)
			}
		}
		if js, err := st.Jobs(ctx, store.JobFilter{}); err != nil || len(js) != 0 {
			t.Fatalf("refused submissions stored %d jobs (%v)", len(js), err)
		}
		if j, err := svc.Submit(ctx, user, spec("detect", "")); err != nil || j.ImageRef != "" {
			t.Fatalf("a plain command on a process node: %+v, %v", j, err)
		}

		joinRuntime(t, d, st, al, "pod", "1xL4-24GB", agentapi.RuntimePodman)
		want := []string{busybox.Reference, "ghcr.io/lab/train:2", busybox.Reference}
		for i, s := range images {
			j, err := svc.Submit(ctx, user, s)
			if err != nil || j.ImageRef != want[i] {
				t.Errorf("submit %s with image %q beside a podman node: %+v, %v; want image %s", s.Project, s.Image, j, err, want[i])
			}
		}
	})
}
