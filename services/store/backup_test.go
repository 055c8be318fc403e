package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A backup of the embedded database runs while a server writes, without waiting for
// the write, and copies what was committed: the copy opens as a data directory of its
// own.
func TestBackupCopiesWhatWasCommitted(t *testing.T) {
	t.Parallel()
	cfg := storetest.Backends()[0].Config(t)
	server := storetest.Open(t, cfg)
	s := storetest.Open(t, cfg) // gantry admin backup: another process
	ctx := context.Background()
	u, p := fixture(t, s)
	committed := &models.Job{Name: "committed", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
	if err := s.CreateJob(ctx, committed, "user:ada"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "odd ?#% name")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gantry-backup.db")
	var b store.Backup
	inFlight := errors.New("roll back")
	err := server.InTx(ctx, func(tx *store.Store) error {
		j := &models.Job{Name: "in-flight", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		if err := tx.CreateJob(ctx, j, "user:ada"); err != nil {
			return err
		}
		var err error
		if b, err = s.Backup(ctx, path); err != nil {
			t.Fatalf("backup during a write: %v", err)
		}
		return inFlight
	})
	if !errors.Is(err, inFlight) {
		t.Fatal(err)
	}
	all, _ := migrations.All()
	if b.Schema != all[len(all)-1].Version || b.Bytes == 0 {
		t.Errorf("backup = %+v; want schema %d", b, all[len(all)-1].Version)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the backup's directory holds %v, want the backup alone", entries)
	}

	restored := t.TempDir()
	if err := os.Rename(path, filepath.Join(restored, store.SQLiteFile)); err != nil {
		t.Fatal(err)
	}
	copied, err := store.Open(ctx, store.Config{DataDir: restored})
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	jobs, err := copied.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id", "name"}, Limit: 5})
	if err != nil || len(jobs) != 1 || jobs[0].Name != "committed" {
		t.Fatalf("jobs in the copy = %+v, %v; want the committed one alone", jobs, err)
	}
}

// A backup never overwrites a file, and PostgreSQL is left to its own tools.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t, storetest.Backends()[0].Config(t))
	existing := filepath.Join(t.TempDir(), "earlier.db")
	if err := os.WriteFile(existing, []byte("an earlier backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(ctx, existing); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("backup over a file: %v, want it refused", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "an earlier backup" {
		t.Errorf("the existing file now holds %q", b)
	}
	missing := filepath.Join(t.TempDir(), "no-such-dir", "b.db")
	if _, err := s.Backup(ctx, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("backup into a missing directory: %v, want an error naming %s", err, missing)
	}
	pg := storetest.Open(t, storetest.Backends()[1].Config(t))
	if _, err := pg.Backup(ctx, filepath.Join(t.TempDir(), "pg.db")); !errors.Is(err, store.ErrBackupElsewhere) {
		t.Errorf("backup of PostgreSQL: %v, want ErrBackupElsewhere", err)
	}
}
