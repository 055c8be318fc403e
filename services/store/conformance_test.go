package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// fixture creates a user, a team and a project to hang other records on.
func fixture(t *testing.T, s *store.Store) (*models.User, *models.Project) {
	t.Helper()
	ctx := context.Background()
	u := &models.User{Username: "ada", Email: "ada@example.com"}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	team := &models.Team{Name: "vision"}
	if err := s.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	p := &models.Project{TeamID: team.ID, Name: "detect"}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	return u, p
}

func TestUsersTeamsProjects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		if u.ID == 0 || p.ID == 0 {
			t.Fatal("IDs not set on create")
		}
		got, err := s.UserByUsername(ctx, "ada")
		if err != nil || got.Email != "ada@example.com" {
			t.Fatalf("UserByUsername = %+v, %v", got, err)
		}
		if _, off := got.CreatedAt.Zone(); off != 0 || time.Since(got.CreatedAt) > time.Minute {
			t.Errorf("created_at = %v, want a recent UTC time", got.CreatedAt)
		}
		if err := s.CreateUser(ctx, &models.User{Username: "ada"}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("duplicate username: %v, want ErrConflict", err)
		}
		if _, err := s.UserByUsername(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing user: %v, want ErrNotFound", err)
		}
		if err := s.CreateProject(ctx, &models.Project{TeamID: 9999, Name: "orphan"}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("project of unknown team: %v, want ErrConflict", err)
		}
		if err := s.SetMembership(ctx, u.ID, p.ID, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMembership(ctx, u.ID, p.ID, models.RoleTeamLead); err != nil {
			t.Fatal(err)
		}
		ms, err := s.MembershipsOfUser(ctx, u.ID)
		if err != nil || len(ms) != 1 || ms[0].Role != models.RoleTeamLead {
			t.Fatalf("memberships = %+v, %v; want one team-lead", ms, err)
		}
		u.Disabled = true
		if err := s.UpdateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.UserByID(ctx, u.ID); !again.Disabled {
			t.Error("UpdateUser did not persist Disabled")
		}
	})
}

func TestJobsLifecycleAndPaging(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		var ids []int64
		for i := 0; i < 7; i++ {
			j := &models.Job{Name: fmt.Sprintf("train-%d", i), ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 1}
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
			if j.State != models.JobQueued || j.ID == 0 {
				t.Fatalf("created job = %+v", j)
			}
			ids = append(ids, j.ID)
		}
		page1, err := s.Jobs(ctx, store.JobFilter{ProjectIDs: []int64{p.ID}, Limit: 4})
		if err != nil || len(page1) != 4 || page1[0].ID != ids[6] {
			t.Fatalf("page 1 = %d jobs, first %v, err %v", len(page1), page1, err)
		}
		page2, err := s.Jobs(ctx, store.JobFilter{ProjectIDs: []int64{p.ID}, Limit: 4, BeforeID: page1[3].ID})
		if err != nil || len(page2) != 3 || page2[2].ID != ids[0] {
			t.Fatalf("page 2 = %+v, %v", page2, err)
		}

		id := ids[0]
		if err := s.TransitionJob(ctx, id, store.Transition{From: models.JobQueued, To: models.JobScheduled, Reason: "placed on node-1", Actor: "system"}); err != nil {
			t.Fatal(err)
		}
		err = s.TransitionJob(ctx, id, store.Transition{From: models.JobQueued, To: models.JobScheduled, Actor: "system"})
		if !errors.Is(err, store.ErrStale) {
			t.Fatalf("second move from queued: %v, want ErrStale", err)
		}
		if err := s.TransitionJob(ctx, id, store.Transition{From: models.JobScheduled, To: models.JobRunning, Reason: "started"}); err != nil {
			t.Fatal(err)
		}
		if err := s.TransitionJob(ctx, id, store.Transition{From: models.JobRunning, To: models.JobSucceeded, Reason: "exit 0"}); err != nil {
			t.Fatal(err)
		}
		if err := s.TransitionJob(ctx, id, store.Transition{From: models.JobSucceeded, To: models.JobRunning}); err == nil {
			t.Fatal("a finished job must not run again")
		}
		j, err := s.JobByID(ctx, id)
		if err != nil || j.State != models.JobSucceeded || j.StartedAt == nil || j.FinishedAt == nil {
			t.Fatalf("job after run = %+v, %v", j, err)
		}
		evs, err := s.JobEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{models.JobQueued, models.JobScheduled, models.JobRunning, models.JobSucceeded}
		if len(evs) != len(want) {
			t.Fatalf("events = %+v", evs)
		}
		for i, e := range evs {
			if e.ToState != want[i] {
				t.Errorf("event %d to %s, want %s", i, e.ToState, want[i])
			}
		}
		if evs[1].Reason != "placed on node-1" {
			t.Errorf("reason lost: %q", evs[1].Reason)
		}
		queued, _ := s.Jobs(ctx, store.JobFilter{States: []string{models.JobQueued}})
		if len(queued) != 6 {
			t.Errorf("queued jobs = %d, want 6", len(queued))
		}
		if err := s.TransitionJob(ctx, 424242, store.Transition{From: models.JobQueued, To: models.JobHeld}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("move of a missing job: %v, want ErrNotFound", err)
		}
	})
}

func TestCatalogAndNodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pcs, err := s.PriorityClasses(ctx)
		if err != nil || len(pcs) != 3 || pcs[0].Name != "production" || pcs[2].Name != "test" {
			t.Fatalf("default priority classes = %+v, %v", pcs, err)
		}
		for _, img := range []models.Image{
			{Name: "pytorch-2.5-cuda12.4", Reference: "nvcr.io/nvidia/pytorch:24.10-py3", Status: models.ImageDeprecated},
			{Name: "jax-0.4-cuda12", Reference: "ghcr.io/jax:0.4", Status: models.ImageCertified},
		} {
			if err := s.CreateImage(ctx, &img); err != nil {
				t.Fatal(err)
			}
		}
		imgs, _ := s.Images(ctx)
		if len(imgs) != 2 || imgs[0].Status != models.ImageCertified {
			t.Fatalf("images not certified-first: %+v", imgs)
		}
		for q, want := range map[string]int{"PyTorch-2.5": 1, "cuda": 2, "_": 0, "%": 0, "2.5_cuda": 0} {
			if got, err := s.ImagesMatching(ctx, store.ImageFilter{Query: q}); len(got) != want || err != nil {
				t.Errorf("search %q found %d images, %v; want %d", q, len(got), err, want)
			}
		}
		n := &models.Node{Name: "gpu-1", State: models.NodeReady, CPUMilli: 64000, MemoryMiB: 512 * 1024}
		devs := []models.GPUDevice{
			{Index: 0, UUID: "GPU-a", Model: "A100-SXM4-80GB", MemoryMiB: 81920, Healthy: true},
			{Index: 1, UUID: "GPU-b", Model: "A100-SXM4-80GB", MemoryMiB: 81920, Healthy: true},
		}
		if err := s.CreateNode(ctx, n, devs); err != nil {
			t.Fatal(err)
		}
		got, err := s.DevicesOfNode(ctx, n.ID)
		if err != nil || len(got) != 2 || got[1].UUID != "GPU-b" || got[1].MemoryMiB != 81920 {
			t.Fatalf("devices = %+v, %v", got, err)
		}
		dup := &models.Node{Name: "gpu-2", State: models.NodeReady}
		err = s.CreateNode(ctx, dup, []models.GPUDevice{{Index: 0, UUID: "GPU-a", Model: "x", MemoryMiB: 1}})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate GPU UUID: %v, want ErrConflict", err)
		}
		if _, err := s.NodeByName(ctx, "gpu-2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed CreateNode must leave nothing behind: %v", err)
		}
	})
}
