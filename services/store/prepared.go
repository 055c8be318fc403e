package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// maxPrepared bounds the statements a preparedPool keeps; past it, new texts run
// unprepared. The store's read queries are a few dozen texts, but a text can vary with
// its input (the length of an IN list), and a statement is never evicted: evicting one
// that another request has just taken would fail that request's query.
const maxPrepared = 512

// preparedPool runs each query of its *sql.DB through a prepared statement that it keeps
// by the query's text. The SQLite driver compiles a statement at every run unless it
// is prepared (compiling was a quarter of a jobs page's CPU); database/sql prepares a
// kept statement again on each connection it runs on, once.
type preparedPool struct {
	*sql.DB

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newPreparedPool(db *sql.DB) *preparedPool {
	return &preparedPool{DB: db, stmts: map[string]*sql.Stmt{}}
}

// GetDBConn is the *sql.DB under the pool, for gorm's DB().
func (p *preparedPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// stmt returns the kept statement of query, preparing it first; nil when it cannot be
// prepared or kept (the query then runs unprepared and reports its own error). No lock
// is held while preparing, which waits for a free connection.
func (p *preparedPool) stmt(ctx context.Context, query string) *sql.Stmt {
	p.mu.Lock()
	st, full := p.stmts[query], len(p.stmts) >= maxPrepared
	p.mu.Unlock()
	if st != nil || full {
		return st
	}
	st, err := p.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept := p.stmts[query]; kept != nil || len(p.stmts) >= maxPrepared {
		st.Close()
		return kept
	}
	p.stmts[query] = st
	return st
}

func (p *preparedPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, query, args...)
}

func (p *preparedPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.DB.QueryRowContext(ctx, query, args...)
}

// keptConnector opens the read pool's connections to dsn: modernc's, each keeping the
// statements of readRows compiled (keptConn).
type keptConnector struct{ dsn string }

func (k keptConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := k.Driver().Open(k.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(sqliteConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("the SQLite driver's connection is a %T, which lacks what database/sql uses", c)
	}
	return &keptConn{sqliteConn: sc, stmts: map[string]driver.Stmt{}}, nil
}

func (keptConnector) Driver() driver.Driver { return &sqlite.Driver{} }

// sqliteConn is what database/sql uses of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// keptConn is a connection with the statements that readRows ran on it, by text, up
// to maxPrepared. Only the holder of the connection (database/sql lends it to one at
// a time) touches stmts.
type keptConn struct {
	sqliteConn
	stmts map[string]driver.Stmt
}

// query runs query on c, through its kept statement when there is or can be one.
func (c *keptConn) query(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st := c.stmts[query]
	if st == nil && len(c.stmts) < maxPrepared {
		var err error
		if st, err = c.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		c.stmts[query] = st
	}
	if st == nil {
		return c.QueryContext(ctx, query, args)
	}
	return st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (c *keptConn) Close() error {
	for _, st := range c.stmts {
		st.Close()
	}
	clear(c.stmts)
	return c.sqliteConn.Close()
}
