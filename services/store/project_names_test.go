package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The jobs page's project filter: every project's name, sorted, and the names of some.
func TestProjectNames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if names, err := s.ProjectNames(ctx); err != nil || len(names) != 0 {
			t.Fatalf("names before any project = %v, %v", names, err)
		}
		_, detect := fixture(t, s)
		ids := map[string]int64{"detect": detect.ID}
		for _, name := range []string{"speech", "asr", "vision-2"} {
			p := &models.Project{TeamID: detect.TeamID, Name: name}
			if err := s.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			ids[name] = p.ID
		}
		names, err := s.ProjectNames(ctx)
		if want := []string{"asr", "detect", "speech", "vision-2"}; err != nil || !slices.Equal(names, want) {
			t.Errorf("ProjectNames = %v, %v; want %v", names, err, want)
		}
		byID, err := s.ProjectNamesByID(ctx, []int64{ids["speech"], ids["asr"]})
		if err != nil || len(byID) != 2 || byID[ids["speech"]] != "speech" || byID[ids["asr"]] != "asr" {
			t.Errorf("ProjectNamesByID = %v, %v", byID, err)
		}
	})
}

// Names come back exactly, whatever they hold: on SQLite they are read out of one JSON
// array, escapes and all. The first letters decide the order on any collation.
func TestProjectNamesReadExactly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, detect := fixture(t, s)
		odd := []string{`a"quoted"`, `b\back\`, "c\n\t\r\x01\x1f\x7f", "fé日本", "g😀", `h","i`, "j[]{}:,", "k</>&\u2028"}
		for _, name := range odd {
			if err := s.CreateProject(ctx, &models.Project{TeamID: detect.TeamID, Name: name}); err != nil {
				t.Fatal(err)
			}
		}
		want := slices.Concat(odd[:3], []string{"detect"}, odd[3:])
		names, err := s.ProjectNames(ctx)
		if err != nil || !slices.Equal(names, want) {
			t.Errorf("ProjectNames = %q, %v; want %q", names, err, want)
		}
		_, names, err = s.BriefJobsAndProjectNames(ctx, store.JobFilter{Columns: []string{"id"}, Limit: 1})
		if err != nil || !slices.Equal(names, want) {
			t.Errorf("the jobs page's names = %q, %v; want %q", names, err, want)
		}
	})
}

// The jobs page of a caller who reads every project names each row's project from the
// names it reads beside the rows: each row has the project the list's join gives it,
// on the first page and the next, sorted by name too.
func TestJobsPageNamesEachRowsProject(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, detect := fixture(t, s)
		projects := []*models.Project{detect}
		for _, name := range []string{"speech", "asr", "z-last"} {
			p := &models.Project{TeamID: detect.TeamID, Name: name}
			if err := s.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			projects = append(projects, p)
		}
		for i := range 11 {
			p := projects[(i*7)%3]
			j := &models.Job{Name: fmt.Sprintf("job-%02d", i), ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := s.CreateJob(ctx, j, "test"); err != nil {
				t.Fatal(err)
			}
		}
		for _, sort := range []string{store.JobsBySubmitted, store.JobsByName} {
			f := store.JobFilter{Sort: sort, Columns: store.BriefJobColumns, Limit: 4}
			for page := 0; page < 3; page++ {
				want, err := s.BriefJobs(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got, names, err := s.BriefJobsAndProjectNames(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, page %d: jobs = %+v, want %+v", sort, page, got, want)
				}
				if wantNames := []string{"asr", "detect", "speech", "z-last"}; !slices.Equal(names, wantNames) {
					t.Errorf("%s, page %d: names = %v, want %v", sort, page, names, wantNames)
				}
				last := store.BriefKeyOf(&got[len(got)-1])
				f.After = &last
			}
		}
	})
}

// A user's roles come by project name, with each project's team.
func TestProjectRolesOfUser(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, detect := fixture(t, s)
		asr := &models.Project{TeamID: detect.TeamID, Name: "asr"}
		other := &models.Project{TeamID: detect.TeamID, Name: "other"}
		for _, p := range []*models.Project{asr, other} {
			if err := s.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetMembership(ctx, u.ID, detect.ID, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMembership(ctx, u.ID, asr.ID, models.RoleTeamLead); err != nil {
			t.Fatal(err)
		}
		roles, err := s.ProjectRolesOfUser(ctx, u.ID)
		want := []store.ProjectRole{{ProjectID: asr.ID, Project: "asr", Team: "vision", Role: models.RoleTeamLead},
			{ProjectID: detect.ID, Project: "detect", Team: "vision", Role: models.RoleMember}}
		if err != nil || !slices.Equal(roles, want) {
			t.Errorf("ProjectRolesOfUser = %+v, %v; want %+v", roles, err, want)
		}
		if roles, err := s.ProjectRolesOfUser(ctx, u.ID+1000); err != nil || len(roles) != 0 {
			t.Errorf("roles of nobody = %+v, %v", roles, err)
		}
	})
}
