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
