// Package migrations holds Gantry's schema as an append-only, numbered list of SQL files.
// A file NNNN_name.sql applies to every dialect; NNNN_name.DIALECT.sql to one only.
// Never edit a released migration: add the next number.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Dialects the schema is written for.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Migration is one numbered step of the schema.
type Migration struct {
	Version int
	Name    string
	sql     map[string]string // dialect ("" = all) -> raw SQL
}

// placeholders maps the dialect-neutral types used in the SQL files to each dialect.
var placeholders = map[string]*strings.Replacer{
	SQLite: strings.NewReplacer(
		"{{pk}}", "INTEGER PRIMARY KEY AUTOINCREMENT",
		"{{ts}}", "DATETIME",
		"{{bytes}}", "BLOB",
		"{{real}}", "REAL",
	),
	Postgres: strings.NewReplacer(
		"{{pk}}", "BIGSERIAL PRIMARY KEY",
		"{{ts}}", "TIMESTAMPTZ",
		"{{bytes}}", "BYTEA",
		"{{real}}", "DOUBLE PRECISION",
	),
}

// SQL returns the statements of the migration for a dialect: empty where its file holds
// only comments (a dialect that needs nothing of this migration).
func (m Migration) SQL(dialect string) (string, error) {
	r, ok := placeholders[dialect]
	if !ok {
		return "", fmt.Errorf("migration %d: unknown dialect %q", m.Version, dialect)
	}
	raw, ok := m.sql[dialect]
	if !ok {
		raw = m.sql[""]
	}
	if onlyComments(raw) {
		return "", nil
	}
	return r.Replace(raw), nil
}

// onlyComments says whether sql holds no statement: blank lines and -- comments only,
// the file of a dialect that needs nothing from a migration. SQLite's driver answers
// such a text with no result at all, which gorm does not expect.
func onlyComments(sql string) bool {
	for line := range strings.Lines(sql) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			return false
		}
	}
	return true
}

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+?)(?:\.(sqlite|postgres))?\.sql$`)

// All returns every migration in version order.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must be NNNN_name.sql or NNNN_name.DIALECT.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2], sql: map[string]string{}}
			byVersion[v] = mig
		}
		if mig.Name != m[2] {
			return nil, fmt.Errorf("migration %d has two names: %q and %q", v, mig.Name, m[2])
		}
		mig.sql[m[3]] = string(body)
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations must be numbered 1, 2, 3…: found %d at position %d", m.Version, i+1)
		}
		_, common := m.sql[""]
		_, lite := m.sql[SQLite]
		_, pg := m.sql[Postgres]
		if !common && !(lite && pg) {
			return nil, fmt.Errorf("migration %d (%s) must exist for every dialect", m.Version, m.Name)
		}
	}
	return out, nil
}
