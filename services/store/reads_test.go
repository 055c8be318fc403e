package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The reads of every request (sign-in, the jobs page's names and rows) skip gorm, and
// on PostgreSQL go through pgx on a connection of the pool; inside a transaction they
// still read within it, and see its writes before they are committed.
func TestRequestReadsJoinTheTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		rollback := errors.New("roll back")
		err := s.InTx(ctx, func(tx *store.Store) error {
			if err := tx.CreateProject(ctx, &models.Project{TeamID: p.TeamID, Name: "uncommitted"}); err != nil {
				return err
			}
			if names, err := tx.ProjectNames(ctx); err != nil || !slices.Equal(names, []string{"detect", "uncommitted"}) {
				t.Errorf("project names in the transaction = %v, %v; want detect and uncommitted", names, err)
			}
			j := &models.Job{Name: "inside", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := tx.CreateJob(ctx, j, "test"); err != nil {
				return err
			}
			jobs, err := tx.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id", "name"}, Limit: 5})
			if err != nil || len(jobs) != 1 || jobs[0].Name != "inside" || jobs[0].ProjectName != "detect" || jobs[0].Username != "ada" {
				t.Errorf("jobs listed in the transaction = %+v, %v; want the job inside", jobs, err)
			}
			now := time.Now().UTC()
			if err := tx.CreateSession(ctx, &models.Session{ID: "in-tx", UserID: u.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
			if sess, in, err := tx.SessionSignIn(ctx, "in-tx"); err != nil || sess.UserID != u.ID || in.User.Username != "ada" {
				t.Errorf("sign-in in the transaction = %+v, %+v, %v", sess, in, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if names, err := s.ProjectNames(ctx); err != nil || !slices.Equal(names, []string{"detect"}) {
			t.Errorf("project names after the rollback = %v, %v; want detect", names, err)
		}
		if jobs, err := s.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id"}}); err != nil || len(jobs) != 0 {
			t.Errorf("jobs after the rollback = %+v, %v; want none", jobs, err)
		}
		if _, _, err := s.SessionSignIn(ctx, "in-tx"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("sign-in after the rollback: %v, want ErrNotFound", err)
		}
	})
}

// The jobs page of a caller who reads every project needs its rows and every
// project's name: on PostgreSQL they come in one round trip, as they would in two
// separate reads.
func TestJobsPageReadsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := storetest.Backends()[1].Config(t)
	s, trips, err := store.OpenCounting(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	u, p := fixture(t, s)
	for _, name := range []string{"b-second", "a-first"} {
		j := &models.Job{Name: name, ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		if err := s.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateProject(ctx, &models.Project{TeamID: p.TeamID, Name: "asr"}); err != nil {
		t.Fatal(err)
	}
	f := store.JobFilter{Sort: store.JobsByName, Ascending: true, Columns: []string{"id", "name"}, Limit: 5}
	wantJobs, err := s.ListedJobs(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	// The first time, each statement is prepared on its connection first.
	for i := range 2 {
		before := trips.Count()
		jobs, names, err := s.ListedJobsAndProjectNames(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(jobs, wantJobs) || len(jobs) != 2 || jobs[0].Name != "a-first" || jobs[1].ProjectName != "detect" {
			t.Errorf("jobs = %+v, want %+v", jobs, wantJobs)
		}
		if !slices.Equal(names, []string{"asr", "detect"}) {
			t.Errorf("names = %v, want asr, detect", names)
		}
		if n := trips.Count() - before; i == 1 && n != 1 {
			t.Errorf("the page's rows and names took %d round trips, want 1", n)
		}
	}
	if _, _, err := s.ListedJobsAndProjectNames(ctx, store.JobFilter{}); err == nil {
		t.Error("a page that names no columns was read")
	}
}
