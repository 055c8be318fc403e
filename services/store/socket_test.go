package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A PostgreSQL on the same machine serves through its Unix socket: the URL names the
// socket's directory as libpq does (?host=DIR), and a URL that names no server at all
// is refused with the forms it may take.
func TestPostgresThroughItsUnixSocket(t *testing.T) {
	t.Parallel()
	cfg := storetest.Backends()[1].Config(t)
	admin, err := sql.Open("pgx", cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var dirs string
	if err := admin.QueryRow("SHOW unix_socket_directories").Scan(&dirs); err != nil {
		t.Fatal(err)
	}
	dir, _, _ := strings.Cut(dirs, ",")
	if dir = strings.TrimSpace(dir); dir == "" {
		t.Skip("SKIP: the test server listens on no Unix socket")
	}
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("host", dir)
	q.Set("port", u.Port())
	u.Host, u.RawQuery = "", q.Encode()
	s, err := store.Open(context.Background(), store.Config{DatabaseURL: u.String()})
	if err != nil {
		t.Fatalf("open %s: %v", u.Redacted(), err)
	}
	defer s.Close()
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(context.Background(), &models.User{Username: "sock"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByUsername(context.Background(), "sock"); err != nil {
		t.Errorf("read back through the socket: %v", err)
	}
	_, err = store.Open(context.Background(), store.Config{DatabaseURL: "postgres:///gantry"})
	if err == nil || !strings.Contains(err.Error(), "postgres://USER@/DATABASE?host=/run/postgresql") {
		t.Errorf("a URL without a server: %v", err)
	}
}
