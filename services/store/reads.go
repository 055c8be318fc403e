package store

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// A read is one statement of readRows and what to do with its rows.
type read struct {
	query string
	args  []any
	// scan reads the rows; it must not keep them.
	scan func(rows rowScanner) error
}

// rowScanner is what a read's scan needs of its rows. Scan takes plain pointers to
// fields (*int, **time.Time, …) on every database. Pass it a slice made once for all
// rows (dest...): arguments listed at the call go to the heap at every row, as the
// compiler cannot see through the interface that Scan keeps none of them.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}

// readRows runs reads on the read pool, in order, and hands each its rows: the
// reads of every request (sign-in, the jobs page) skip gorm. On PostgreSQL outside
// a transaction they go through pgx itself, all in one round trip: database/sql
// would box each value of a row as a driver.Value and convert it again into its
// field, which was half of a jobs page's query CPU.
func (s *Store) readRows(ctx context.Context, reads ...read) error {
	if s.pg != nil {
		return s.readNative(ctx, reads)
	}
	for _, r := range reads {
		if err := s.readSQL(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) readSQL(ctx context.Context, r read) error {
	rows, err := s.read(ctx).Statement.ConnPool.QueryContext(ctx, r.query, r.args...)
	if err != nil {
		return s.driverError(err)
	}
	defer rows.Close()
	if err := r.scan(&sqlRows{Rows: rows}); err != nil {
		return err
	}
	return s.driverError(rows.Err())
}

// readNative runs reads on one of the pool's connections through pgx: one read as a
// query, several as a batch, which pgx sends in one write and PostgreSQL answers in
// one (each statement still reads at its own snapshot, as sequential reads would).
func (s *Store) readNative(ctx context.Context, reads []read) error {
	conn, err := s.pg.Conn(ctx)
	if err != nil {
		return s.driverError(err)
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c := driverConn.(*stdlib.Conn).Conn()
		if len(reads) == 1 {
			rows, err := c.Query(ctx, reads[0].query, reads[0].args...)
			if err != nil {
				return s.driverError(err)
			}
			return s.scanNative(rows, reads[0])
		}
		var b pgx.Batch
		for _, r := range reads {
			b.Queue(r.query, r.args...)
		}
		results := c.SendBatch(ctx, &b)
		for _, r := range reads {
			rows, err := results.Query()
			if err == nil {
				err = s.scanNative(rows, r)
			}
			if err != nil {
				results.Close()
				return err
			}
		}
		return s.driverError(results.Close())
	})
}

func (s *Store) scanNative(rows pgx.Rows, r read) error {
	defer rows.Close()
	if err := r.scan(rows); err != nil {
		return err
	}
	return s.driverError(rows.Err())
}

// sqlRows scans through scanDest, which database/sql needs for fields that pgx
// fills directly.
type sqlRows struct {
	*sql.Rows
	dest []any
}

func (r *sqlRows) Scan(dest ...any) error {
	r.dest = r.dest[:0]
	for _, d := range dest {
		r.dest = append(r.dest, scanDest(d))
	}
	return r.Rows.Scan(r.dest...)
}
