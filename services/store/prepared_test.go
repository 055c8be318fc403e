package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
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
