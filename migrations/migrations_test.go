package migrations

import (
	"strings"
	"testing"
)

func TestAllAreNumberedAndRenderForEveryDialect(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no migrations embedded")
	}
	for _, m := range all {
		for _, d := range []string{SQLite, Postgres} {
			sql, err := m.SQL(d)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sql, "{{") {
				t.Errorf("migration %d for %s keeps a placeholder", m.Version, d)
			}
		}
	}
	if _, err := all[0].SQL("mysql"); err == nil {
		t.Error("an unknown dialect must be an error")
	}
}

// A dialect's file of comments only (PostgreSQL's 0034: the covering index is SQLite's)
// has no statement to run; one with a statement keeps all of it.
func TestAFileOfCommentsOnlyHasNoStatements(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if sql, err := all[33].SQL(Postgres); err != nil || sql != "" {
		t.Errorf("0034 for PostgreSQL = %q, %v; want no statements", sql, err)
	}
	if sql, err := all[33].SQL(SQLite); err != nil || !strings.Contains(sql, "CREATE INDEX jobs_submitted_brief") || !strings.HasPrefix(sql, "--") {
		t.Errorf("0034 for SQLite = %q, %v; want its comments and statements", sql, err)
	}
	for text, want := range map[string]bool{"": true, "\n-- a\n  -- b\n\n": true, "-- a\nSELECT 1; -- b": false, "  SELECT 1": false} {
		if got := onlyComments(text); got != want {
			t.Errorf("onlyComments(%q) = %v, want %v", text, got, want)
		}
	}
}
