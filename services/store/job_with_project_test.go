package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The gate of a job route reads the job and its project in one statement, and of a
// project route the project by its name: as the gorm getters read them, every column
// and NULL.
func TestJobAndProjectReadAsTheirGetters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		img := &models.Image{Name: "pytorch-2.4", Reference: "nvcr.io/nvidia/pytorch:24.07-py3", Framework: "pytorch", Status: models.ImageCertified}
		if err := s.CreateImage(ctx, img); err != nil {
			t.Fatal(err)
		}
		p.DisplayName, p.AllowCustomImages, p.AllowedPools, p.AllowedRegions, p.ConfidentialOnly, p.DefaultImageID =
			"Detection", true, `["a100"]`, `["eu"]`, true, &img.ID
		if err := s.UpdateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		// Values differ from each other where columns share a type, so that two swapped read wrong.
		at, started, finished := time.Date(2026, 3, 2, 9, 0, 0, 123456000, time.UTC), time.Date(2026, 3, 2, 9, 1, 0, 0, time.UTC),
			time.Date(2026, 3, 2, 9, 2, 0, 0, time.UTC)
		code := 3
		full := &models.Job{Name: "full", ProjectID: p.ID, UserID: u.ID, ImageID: &img.ID, ImageRef: img.Reference, Command: `["python"]`,
			Env: `{"A":"1"}`, GPUs: 2, GPUMilli: 500, GPUMemoryMiB: 40960, GPUModel: "A100", MIGProfile: "1g.10gb", CPUMilli: 8000,
			MemoryMiB: 65536, ScratchMiB: 1024, Replicas: 4, Kind: "training", PriorityClass: "research", Preemptible: true, Spot: true,
			ExpectedRunSec: 3600, MaxRetries: 5, Retries: 1, Attempt: 6, StateReason: "submitted", PendingReason: "no GPU free",
			ExitCode: &code, LastCheckpointAt: &at, SubmittedAt: at.Add(-time.Hour), StartedAt: &started, FinishedAt: &finished}
		bare := &models.Job{Name: "bare", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		for _, j := range []*models.Job{full, bare} {
			if err := s.CreateJob(ctx, j, "test"); err != nil {
				t.Fatal(err)
			}
			wantJob, err := s.JobByID(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantProject, err := s.ProjectByID(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			job, project, err := s.JobAndProject(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(job, wantJob) {
				t.Errorf("job\n %+v\nwant\n %+v", job, wantJob)
			}
			if !reflect.DeepEqual(project, wantProject) {
				t.Errorf("project\n %+v\nwant\n %+v", project, wantProject)
			}
		}
		byName, err := s.ProjectByName(ctx, "detect")
		if want, _ := s.ProjectByID(ctx, p.ID); err != nil || !reflect.DeepEqual(byName, want) {
			t.Errorf("project by name\n %+v, %v\nwant\n %+v", byName, err, want)
		}
		if _, err := s.ProjectByName(ctx, "no-such-project"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("no such project: %v, want ErrNotFound", err)
		}
		if full.ExitCode == nil || full.LastCheckpointAt == nil || bare.ImageID != nil {
			t.Fatalf("the jobs do not cover NULL and its absence: %+v, %+v", full, bare)
		}
		if n, m := reflect.TypeFor[models.Job]().NumField(), reflect.TypeFor[models.Project]().NumField(); n != len(store.JobColumns) || m != len(store.ProjectColumns) {
			t.Errorf("a job has %d fields and a project %d; JobAndProject reads %d and %d columns", n, m, len(store.JobColumns), len(store.ProjectColumns))
		}
		if _, _, err := s.JobAndProject(ctx, bare.ID+100); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("no such job: %v, want ErrNotFound", err)
		}
	})
}
