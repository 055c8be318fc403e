package feedback_test

import (
	"testing"

	"github.com/gantry-gpu/gantry/migrations"
)

// migrationVersion is the version of the migration called name: a test of what it does
// forgets that it ran, writes rows as they were before it, and migrates again.
func migrationVersion(t *testing.T, name string) int {
	t.Helper()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if m.Name == name {
			return m.Version
		}
	}
	t.Fatalf("no migration %s", name)
	return 0
}
