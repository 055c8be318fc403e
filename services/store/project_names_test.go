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
