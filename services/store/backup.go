package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/gantry-gpu/gantry/migrations"
)

// ErrBackupElsewhere: Backup copies the embedded database only; PostgreSQL has its own
// tools for a consistent copy of a running server.
var ErrBackupElsewhere = errors.New("a PostgreSQL database is backed up with pg_dump or the server's own backups, not by gantry")

// Backup is what a backup wrote: its size and the schema version it holds.
type Backup struct {
	Bytes  int64
	Schema int
}

// Backup writes a copy of the embedded SQLite database to path, which must not exist,
// while servers may go on writing: VACUUM INTO reads one snapshot, so the copy is the
// database as it was at one moment, in one file that opens on its own (no WAL beside
// it). It is written under a temporary name beside path and renamed only once SQLite
// finds it whole and it is on disk, so an interrupted backup leaves no file that looks
// like one.
func (s *Store) Backup(ctx context.Context, path string) (Backup, error) {
	if s.dialect != migrations.SQLite {
		return Backup{}, ErrBackupElsewhere
	}
	if _, err := os.Lstat(path); err == nil {
		return Backup{}, fmt.Errorf("back up to %s: the file exists; give a new file name", path)
	}
	// Absolute, so that SQLite never reads the name as a URI ("file:…").
	abs, err := filepath.Abs(path)
	if err != nil {
		return Backup{}, fmt.Errorf("back up to %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), ".gantry-backup-*.partial")
	if err != nil {
		return Backup{}, fmt.Errorf("back up to %s: %w", path, unwrapPathError(err))
	}
	tmp.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmp.Name())
		}
	}()
	// An empty file is what VACUUM INTO may write into; any other it refuses. It runs on
	// the writer's connection: the read pool's are query-only, which VACUUM INTO obeys
	// for its output too. It only reads the database, and does not wait for a writer.
	if err := s.with(ctx).Exec("VACUUM INTO ?", tmp.Name()).Error; err != nil {
		return Backup{}, fmt.Errorf("back up to %s: copy the database: %w", path, err)
	}
	b, err := checkBackup(ctx, tmp.Name())
	if err != nil {
		return Backup{}, fmt.Errorf("back up to %s: the copy does not check: %w", path, err)
	}
	if _, err := os.Lstat(path); err == nil {
		return Backup{}, fmt.Errorf("back up to %s: the file appeared meanwhile; give a new file name", path)
	}
	if err := syncPath(tmp.Name()); err != nil {
		return Backup{}, fmt.Errorf("back up to %s: %w", path, unwrapPathError(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return Backup{}, fmt.Errorf("back up to %s: %w", path, unwrapPathError(err))
	}
	done = true
	if err := syncPath(filepath.Dir(abs)); err != nil { // the new name
		return Backup{}, fmt.Errorf("back up to %s: %w", path, unwrapPathError(err))
	}
	return b, nil
}

// checkBackup opens the copy at path (absolute) on its own, read-only, and has SQLite check every
// page and index of it.
func checkBackup(ctx context.Context, path string) (Backup, error) {
	uri := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&" + SQLiteTimeParams}
	db, err := sql.Open("sqlite", uri.String())
	if err != nil {
		return Backup{}, err
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&verdict); err != nil {
		return Backup{}, fmt.Errorf("integrity check: %w", err)
	}
	if verdict != "ok" {
		return Backup{}, fmt.Errorf("integrity check: %s", verdict)
	}
	var b Backup
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&b.Schema); err != nil {
		return Backup{}, fmt.Errorf("read its schema version: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Backup{}, err
	}
	b.Bytes = fi.Size()
	return b, nil
}

// syncPath has the file or directory at path written to disk, so that a backup said
// done survives a power cut.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
