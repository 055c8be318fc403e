package store_test

import (
	"context"
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
