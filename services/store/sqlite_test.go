package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Gantry's SQLite driver was glebarez/go-sqlite until 2026-12, which wrote a time as
// "2006-01-02 15:04:05.999999999-07:00". A database it wrote must read the same, and a
// time must still be written in that form: a bound time compares with a stored one as text.
func TestSQLiteTimesKeepTheirStoredForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := store.Config{DataDir: t.TempDir()}
	s := storetest.Open(t, cfg)
	u, _ := fixture(t, s)
	// As the old driver wrote them, beside SQLite's own CURRENT_TIMESTAMP form and an offset other than UTC.
	storetest.Exec(t, cfg, fmt.Sprintf(`INSERT INTO sessions (id, user_id, csrf_token, created_at, last_seen_at, expires_at) VALUES
		('old-a', %[1]d, 'c', '2026-03-04 05:06:07.123456789+00:00', '2026-03-04 07:06:08+02:00', '2026-03-04 05:06:09.5'),
		('old-b', %[1]d, 'c', '2026-03-04 05:06:07+00:00', '2026-03-04 05:06:08+00:00', '2026-03-04 05:06:10.5+00:00')`, u.ID))
	at := func(sec, nsec int) time.Time { return time.Date(2026, 3, 4, 5, 6, sec, nsec, time.UTC) }
	want := models.Session{ID: "old-a", UserID: u.ID, CSRFToken: "c", CreatedAt: at(7, 123456789), LastSeenAt: at(8, 0), ExpiresAt: at(9, 500000000)}

	got, err := s.SessionByID(ctx, "old-a")
	if err != nil {
		t.Fatal(err)
	}
	if *got != want {
		t.Errorf("session read through gorm = %+v, want %+v (in UTC)", *got, want)
	}
	signed, _, err := s.SessionSignIn(ctx, "old-a")
	if err != nil {
		t.Fatal(err)
	}
	if *signed != want {
		t.Errorf("session read at sign-in = %+v, want %+v (in UTC)", *signed, want)
	}

	fresh := &models.Session{ID: "new", UserID: u.ID, CSRFToken: "c", CreatedAt: at(7, 500000000), LastSeenAt: at(8, 0), ExpiresAt: at(11, 0)}
	if err := s.CreateSession(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kind, text string
	// || '' reads the stored text: a DATETIME column itself comes back as a time.
	if err := db.QueryRow("SELECT typeof(created_at), created_at || '' FROM sessions WHERE id = 'new'").Scan(&kind, &text); err != nil {
		t.Fatal(err)
	}
	if kind != "text" || text != "2026-03-04 05:06:07.5+00:00" {
		t.Errorf("a time is stored as %s %q, want text %q", kind, text, "2026-03-04 05:06:07.5+00:00")
	}

	// old-b's expiry (10.5 s) and the new session's (11 s) lie after 10 s, old-a's (9.5 s) before.
	n, err := s.DeleteDeadSessions(ctx, at(10, 0), at(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByID(ctx, "old-b"); n != 1 || err != nil {
		t.Errorf("deleted %d sessions expired at 10 s, and old-b: %v; want only old-a deleted", n, err)
	}
	if _, err := s.SessionByID(ctx, "old-a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old-a after the deletion: %v, want ErrNotFound", err)
	}
}

// SQLite's writer and read pool are two gorm handles, each with its own configuration:
// gorm keeps a handle's dialector, pool and callbacks there, and with one configuration
// the writer's handle carried the read pool's.
func TestSQLiteWriterAndReadPoolKeepTheirOwnHandles(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	if shared, writer, reader := s.GormHandles(); shared || writer || !reader {
		t.Errorf("configuration shared %v, writer's statements prepared %v, read pool's %v; want false, false, true", shared, writer, reader)
	}
}
