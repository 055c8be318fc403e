package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `gantry admin backup` copies the database of a running server; the copy, put in
// place of gantry.db in another data directory, is a whole server again: its audit
// log verifies, the API token made before the backup signs in, and a job's output is
// there.
func TestAdminBackupOfARunningServer(t *testing.T) {
	dir := t.TempDir()
	url, stop := serveFor(t, dir, "--heartbeat-interval", "300ms")
	token := apiToken(t, dir)
	a := api{t: t, url: url, token: token}
	j := a.submit(`echo "kept in the backup"`)
	a.wait(j.ID, "succeeded")

	backup := filepath.Join(t.TempDir(), "gantry-backup.db")
	out, stderr, code := gantry(t, nil, "admin", "backup", "--data-dir", dir, backup)
	if code != 0 || !strings.Contains(out, "Backed up "+filepath.Join(dir, "gantry.db")) || !strings.Contains(out, "to "+backup) {
		t.Fatalf("backup: exit %d: %s%s", code, out, stderr)
	}
	if _, stderr, code := gantry(t, nil, "admin", "backup", "--data-dir", dir, backup); code != 1 || !strings.Contains(stderr, "the file exists") {
		t.Errorf("a second backup to the same file: exit %d: %s", code, stderr)
	}
	stop()

	restored := t.TempDir()
	if err := os.Rename(backup, filepath.Join(restored, "gantry.db")); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := gantry(t, nil, "audit", "verify", "--data-dir", restored); code != 0 {
		t.Fatalf("audit verify of the restored copy: exit %d: %s%s", code, out, stderr)
	}
	url, _ = serveFor(t, restored, "--heartbeat-interval", "300ms")
	b := api{t: t, url: url, token: token}
	if got := b.logs(j.ID); got != "kept in the backup\n" {
		t.Errorf("the job's logs on the restored server = %q", got)
	}
}

// What backup cannot do is said on the flag, with exit 2, and writes nothing.
func TestAdminBackupRefusals(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data-dir", filepath.Join(t.TempDir(), "empty")}, "--data-dir"},
		{[]string{"--database-url", "postgres://gantry@db.example/gantry"}, "pg_dump"},
	} {
		_, stderr, code := gantry(t, nil, append(append([]string{"admin", "backup"}, c.args...), out)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("backup %v: exit %d: %s; want 2 naming %s", c.args, code, stderr, c.want)
		}
	}
	if _, stderr, code := gantry(t, nil, "admin", "backup"); code != 2 || !strings.Contains(stderr, "name the file") {
		t.Errorf("backup without a file: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused backup wrote %s", out)
	}
}
