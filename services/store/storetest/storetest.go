// Package storetest opens migrated, throw-away stores on every database backend for tests:
// SQLite in a temp dir always, PostgreSQL when GANTRY_TEST_POSTGRES_URL names a server
// (an admin URL; each store gets its own fresh database). `make test` starts one and sets
// GANTRY_REQUIRE_POSTGRES=1, under which a missing URL fails instead of skipping.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for test databases
	_ "modernc.org/sqlite"             // database/sql driver "sqlite" for Exec

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/services/store"
)

// Environment variables read by this package.
const (
	EnvPostgresURL     = "GANTRY_TEST_POSTGRES_URL"
	EnvRequirePostgres = "GANTRY_REQUIRE_POSTGRES"
)

// Backend is a database kind the tests run against.
type Backend struct {
	Name string
	// Config returns the configuration of a fresh, empty database; it is dropped when t ends.
	Config func(t testing.TB) store.Config
}

// Backends lists SQLite and PostgreSQL.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", Config: func(t testing.TB) store.Config { return store.Config{DataDir: t.TempDir()} }},
		{Name: "postgres", Config: postgresConfig},
	}
}

// Each runs fn as a subtest on every backend with a fresh, migrated store.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			fn(t, Open(t, b.Config(t)))
		})
	}
}

// Open opens and migrates a store for cfg, closed when t ends. A fresh SQLite database
// starts as a copy of one migrated before: the pure-Go SQLite migrates slowly under -race.
func Open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	if cfg.DatabaseURL == "" {
		if err := seedSQLite(cfg.DataDir); err != nil {
			t.Fatalf("seed the SQLite database: %v", err)
		}
	}
	s, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// PostgresURL returns the admin URL of the test server, skipping (or failing, when
// PostgreSQL is required) if there is none.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvPostgresURL)
	if u == "" {
		if os.Getenv(EnvRequirePostgres) != "" {
			t.Fatalf("%s is not set but %s is: the test command must start PostgreSQL", EnvPostgresURL, EnvRequirePostgres)
		}
		t.Skipf("SKIP PostgreSQL: %s is not set (run `make test` to start a throw-away server)", EnvPostgresURL)
	}
	return u
}

// postgresConfig creates a fresh database on the test server and drops it when t ends.
func postgresConfig(t testing.TB) store.Config {
	t.Helper()
	admin := PostgresURL(t)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "gantry_t_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open PostgreSQL admin connection: %v", err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		db.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		defer db.Close()
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgresURL, err)
	}
	u.Path = "/" + name
	return store.Config{DatabaseURL: u.String()}
}

// Exec runs raw SQL on the database of cfg through a connection of its own, for tests
// that must change the database behind the store's back.
func Exec(t testing.TB, cfg store.Config, query string) {
	t.Helper()
	if err := TryExec(cfg, query); err != nil {
		t.Fatal(err)
	}
}

// TryExec is Exec for statements that the test expects the database may refuse.
func TryExec(cfg store.Config, query string) error {
	db, err := SQL(cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		return fmt.Errorf("exec %q: %w", query, err)
	}
	return nil
}

// SQL opens a database/sql handle of its own on the database of cfg, for tests and
// benchmarks that write behind the store's back (bulk data, broken rows); close it.
// Placeholders are ? on SQLite and $1, $2, … on PostgreSQL.
func SQL(cfg store.Config) (*sql.DB, error) {
	driver, dsn := "pgx", cfg.DatabaseURL
	if dsn == "" {
		driver, dsn = "sqlite", "file:"+cfg.DataDir+"/"+store.SQLiteFile+"?_pragma=busy_timeout(10000)&"+store.SQLiteTimeParams
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", driver, err)
	}
	return db, nil
}

// seedSQLite copies the migrated template into dir, unless dir has a database already.
func seedSQLite(dir string) error {
	dst := filepath.Join(dir, store.SQLiteFile)
	if _, err := os.Stat(dst); err == nil || dir == "" {
		return nil
	}
	tmpl, err := sqliteTemplate()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(tmpl)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// sqliteTemplate returns a SQLite file migrated to this binary's schema. It is made once
// and kept in the temp dir under a name that changes with the migrations, so that every
// test process after the first starts from it.
func sqliteTemplate() (string, error) {
	all, err := migrations.All()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range all {
		q, err := m.SQL(migrations.SQLite)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d\x00%s\x00", m.Version, q)
	}
	path := filepath.Join(os.TempDir(), "gantry-storetest-"+hex.EncodeToString(h.Sum(nil))[:16]+".db")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	dir, err := os.MkdirTemp("", "gantry-storetest-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(context.Background(), store.Config{DataDir: dir})
	if err != nil {
		return "", err
	}
	_, err = s.Migrate(context.Background())
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	// Closing the last connection checkpoints the WAL into the file and removes it.
	if _, err := os.Stat(filepath.Join(dir, store.SQLiteFile+"-wal")); err == nil {
		return "", errors.New("the migrated template kept a WAL file")
	}
	// Another test process may finish its template first: renames are atomic, either wins.
	return path, os.Rename(filepath.Join(dir, store.SQLiteFile), path)
}
