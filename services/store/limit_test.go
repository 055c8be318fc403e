package store_test

import (
	"context"
	"testing"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A page of a list is planned once by PostgreSQL, not at every execution: with its
// LIMIT sent as a parameter every execution was planned afresh.
func TestLimitedQueriesKeepTheirPlan(t *testing.T) {
	s := storetest.Open(t, storetest.Backends()[1].Config(t))
	const runs = 10
	generic, custom, err := s.PlansOf(context.Background(), "JOIN projects ON projects.id = jobs.project_id", func(tx *store.Store) error {
		for range runs {
			if _, err := tx.ListedJobs(context.Background(), store.JobFilter{Sort: "submitted_at", Limit: 26, Columns: []string{"id", "name"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if generic != runs || custom != 0 {
		t.Errorf("%d lists ran on %d generic plans and %d fresh ones, want every one on the generic plan", runs, generic, custom)
	}
}
