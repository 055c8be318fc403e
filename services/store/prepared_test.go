package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestPreparedPoolKeepsStatementsUpToItsBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "p.db")+"?_pragma=journal_mode(WAL)&"+SQLiteTimeParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(3)
	if _, err := db.Exec("CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	p := newPreparedPool(db)
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := p.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	}
	// A kept statement sees every commit: the driver resets it after each run, so no
	// connection holds on to an old snapshot.
	var wg sync.WaitGroup
	for i := range 20 {
		if _, err := db.Exec("INSERT INTO t (n) VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			wg.Go(func() {
				if n := count("SELECT count(*) FROM t WHERE n >= ?", 0); n < i+1 {
					t.Errorf("after %d rows the kept statement counts %d", i+1, n)
				}
			})
		}
		wg.Wait()
	}
	if len(p.stmts) != 1 {
		t.Errorf("kept %d statements for one query text, want 1", len(p.stmts))
	}
	for i := range maxPrepared + 10 {
		if n := count(fmt.Sprintf("SELECT count(*) + %d FROM t", i)); n != 20+i {
			t.Fatalf("query %d counts %d, want %d", i, n, 20+i)
		}
	}
	if len(p.stmts) != maxPrepared {
		t.Errorf("kept %d statements, want the bound %d", len(p.stmts), maxPrepared)
	}
	// A query that cannot be prepared reports its error rather than a nil row.
	if err := p.QueryRowContext(ctx, "SELECT nope FROM t").Scan(new(int)); err == nil {
		t.Error("a query of a missing column scanned without an error")
	}
	if _, err := p.QueryContext(ctx, "SELECT nope FROM t"); err == nil {
		t.Error("a query of a missing column ran without an error")
	}
}

// readRows on SQLite runs each text through a statement its connection keeps: one per
// text and connection up to the bound, each seeing every commit, errors reported.
func TestKeptConnKeepsStatementsUpToItsBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, db := s.db, s.sqliteReads
	if err := w.Exec("CREATE TABLE t (n INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	count := func(query string, args ...any) (n int, kept int) {
		t.Helper()
		var text string
		err := s.readRows(ctx, read{query: query, args: args, scan: func(rows rowScanner) error {
			for rows.Next() {
				if err := rows.Scan(&text); err != nil {
					return err
				}
			}
			return nil
		}})
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if n, err = strconv.Atoi(text); err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Raw(func(c any) error { kept = len(c.(*keptConn).stmts); return nil })
		return n, kept
	}
	for i := range 5 {
		if err := w.Exec("INSERT INTO t (n) VALUES (?)", i).Error; err != nil {
			t.Fatal(err)
		}
		if n, kept := count("SELECT count(*) || '' FROM t WHERE n >= ?", int32(0)); n != i+1 || kept != 1 {
			t.Errorf("after %d rows the kept statement counts %d, and %d are kept; want 1", i+1, n, kept)
		}
	}
	for i := range maxPrepared + 10 {
		if n, kept := count(fmt.Sprintf("SELECT (count(*) + %d) || '' FROM t", i)); n != 5+i || kept != min(i+2, maxPrepared) {
			t.Fatalf("query %d counts %d with %d kept, want %d with %d", i, n, kept, 5+i, min(i+2, maxPrepared))
		}
	}
	err = s.readRows(ctx, read{query: "SELECT nope FROM t", scan: func(rowScanner) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a query of a missing column: %v, want its error", err)
	}
	err = s.readRows(ctx, read{query: "SELECT n FROM t", scan: func(rows rowScanner) error {
		rows.Next()
		return rows.Scan(new(string))
	}})
	if err == nil || !strings.Contains(err.Error(), "want text, got int64") {
		t.Errorf("an integer scanned as text: %v, want an error that says so", err)
	}
}
