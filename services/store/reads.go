package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gantry-gpu/gantry/migrations"
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

// selectRows is SELECT cols FROM rest, the columns as one json_array() value on SQLite:
// the driver reads each column through several calls, and one array costs less than
// its columns (see listedJobsQuery).
func (s *Store) selectRows(cols, rest string) string {
	if s.dialect == migrations.SQLite {
		cols = "json_array(" + cols + ")"
	}
	return "SELECT " + cols + " FROM " + rest
}

// param is the nth parameter's mark in this store's dialect.
func (s *Store) param(n int) string {
	if s.dialect == migrations.SQLite {
		return "?"
	}
	return "$" + strconv.Itoa(n)
}

// readRows runs reads on the read pool, in order, and hands each its rows: the
// reads of every request (sign-in, the jobs page) skip gorm. On PostgreSQL outside
// a transaction they go through pgx itself, all in one round trip: database/sql
// would box each value of a row as a driver.Value and convert it again into its
// field, which was half of a jobs page's query CPU. On SQLite outside a transaction
// they run on one connection of the read pool, by the driver itself (readDriver).
func (s *Store) readRows(ctx context.Context, reads ...read) error {
	if s.pg != nil {
		return s.readNative(ctx, reads)
	}
	if s.sqliteReads != nil {
		return s.readDriver(ctx, reads)
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

// readDriver runs reads on one connection of SQLite's read pool through the driver's
// own statements (keptConn), without database/sql's part of each query and row: its
// retries, the connection's lock at every row, a goroutine per query watching the
// context (and none of the driver's either: see readKept), and the conversion of each
// value into its field.
// Each statement still reads at its own snapshot, as sequential reads would.
func (s *Store) readDriver(ctx context.Context, reads []read) error {
	conn, err := s.sqliteReads.Conn(ctx)
	if err != nil {
		return s.driverError(err)
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c := driverConn.(*keptConn)
		var rows driverRows
		for _, r := range reads {
			if err := s.readKept(ctx, c, &rows, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) readKept(ctx context.Context, c *keptConn, rows *driverRows, r read) error {
	args := make([]driver.NamedValue, len(r.args))
	for i, a := range r.args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	// The driver watches a context that can end with a goroutine of its own for every
	// query, which costs more than a read of a page; these reads are bounded (a key,
	// or a LIMIT over an index) and local, so a request that ends is not waited on
	// for long: it is checked before the read, not watched during it.
	if err := ctx.Err(); err != nil {
		return err
	}
	res, err := c.query(context.WithoutCancel(ctx), r.query, args)
	if err != nil {
		return s.driverError(err)
	}
	defer res.Close()
	rows.Rows, rows.err = res, nil
	rows.values = slices.Grow(rows.values[:0], len(res.Columns()))[:len(res.Columns())]
	if err := r.scan(rows); err != nil {
		return err
	}
	return s.driverError(rows.err)
}

// readNative runs reads on one of the pool's connections through pgx: one read as a
// query, several as a batch, which pgx sends in one write and PostgreSQL answers in
// one (each statement still reads at its own snapshot, as sequential reads would).
// Reads that find their connection dead (PostgreSQL restarted, or ended the session)
// before any row was handed on run again on another: they change nothing, and a blip
// of the database should not fail every request that was reading. Every connection
// opened before the blip may be dead, and each dead one tried is dropped: the tries
// are bounded by the connections left open after the first, and one new.
func (s *Store) readNative(ctx context.Context, reads []read) error {
	lost, err := s.readNativeOnce(ctx, reads)
	for tries := s.pg.Stats().OpenConnections + 1; lost && tries > 0 && ctx.Err() == nil; tries-- {
		lost, err = s.readNativeOnce(ctx, reads)
	}
	return err
}

// readNativeOnce is one try of readNative; lost says that the connection died before
// a row was handed on, which database/sql is told so that it drops the connection.
func (s *Store) readNativeOnce(ctx context.Context, reads []read) (lost bool, err error) {
	conn, err := s.pg.Conn(ctx)
	if err != nil {
		return false, s.driverError(err)
	}
	defer conn.Close()
	rawErr := conn.Raw(func(driverConn any) error {
		c := driverConn.(*stdlib.Conn).Conn()
		texts, _ := s.texts.Get().(*textTable)
		if texts == nil {
			texts = new(textTable)
		}
		defer func() {
			texts.reset()
			s.texts.Put(texts)
		}()
		rows := &pgRows{types: c.TypeMap(), texts: texts}
		err = s.readNativeOn(ctx, c, rows, reads)
		if err != nil && c.IsClosed() && !rows.delivered {
			lost = true
			return driver.ErrBadConn
		}
		return err
	})
	if lost {
		return true, err
	}
	return false, rawErr
}

func (s *Store) readNativeOn(ctx context.Context, c *pgx.Conn, rows *pgRows, reads []read) error {
	if len(reads) == 1 {
		res, err := c.Query(ctx, reads[0].query, reads[0].args...)
		if err != nil {
			return s.driverError(err)
		}
		return s.scanNative(rows, res, reads[0])
	}
	var b pgx.Batch
	for _, r := range reads {
		b.Queue(r.query, r.args...)
	}
	results := c.SendBatch(ctx, &b)
	for _, r := range reads {
		res, err := results.Query()
		if err == nil {
			err = s.scanNative(rows, res, r)
		}
		if err != nil {
			results.Close()
			return err
		}
	}
	return s.driverError(results.Close())
}

func (s *Store) scanNative(rows *pgRows, res pgx.Rows, r read) error {
	defer res.Close()
	rows.Rows, rows.fields = res, res.FieldDescriptions()
	if err := r.scan(rows); err != nil {
		return err
	}
	return s.driverError(res.Err())
}

// pgRows scans the rows of one round trip from their wire values. The types that
// readRows' fields have (text, integers, booleans, times, and nulls of them) are
// decoded here: pgx plans each column's scan anew for every result (a dozen
// allocations for a row of a few columns, at every request) and gives every text
// value its own string. A text repeated across the round trip's rows (a job's
// project, user, image and state; the project names read with them) is one string:
// a page of 26 jobs and 20 project names has ~180 texts, ~60 distinct.
// Any other column or field goes to pgx's own scan.
type pgRows struct {
	pgx.Rows
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	texts  *textTable
	// delivered: a row was handed to a read's scan, so the read cannot simply run again.
	delivered bool
}

func (r *pgRows) Next() bool {
	if r.Rows.Next() {
		r.delivered = true
		return true
	}
	return false
}

func (r *pgRows) Scan(dest ...any) error {
	values := r.RawValues()
	if len(values) != len(dest) || len(r.fields) != len(dest) {
		return fmt.Errorf("scan %d columns into %d fields", len(values), len(dest))
	}
	for i, d := range dest {
		if err := r.scanValue(r.fields[i], values[i], d); err != nil {
			return fmt.Errorf("scan column %s: %w", r.fields[i].Name, err)
		}
	}
	return nil
}

// scanValue stores one column's value src in dest; fd says its type and format.
func (r *pgRows) scanValue(fd pgconn.FieldDescription, src []byte, dest any) error {
	isText := fd.DataTypeOID == pgtype.TextOID || fd.DataTypeOID == pgtype.VarcharOID
	binary := fd.Format == pgtype.BinaryFormatCode
	switch d := dest.(type) {
	case *string:
		if isText && src != nil {
			*d = r.texts.text(src)
			return nil
		}
	case *sql.NullString:
		if isText {
			*d = sql.NullString{String: r.texts.text(src), Valid: src != nil}
			return nil
		}
	case *int64:
		if n, ok := binaryInt(fd, src); ok {
			*d = n
			return nil
		}
	case *int:
		if n, ok := binaryInt(fd, src); ok {
			*d = int(n)
			return nil
		}
	case **int64:
		if src == nil {
			*d = nil
			return nil
		}
		if n, ok := binaryInt(fd, src); ok {
			*d = &n
			return nil
		}
	case **int:
		if src == nil {
			*d = nil
			return nil
		}
		if n, ok := binaryInt(fd, src); ok {
			v := int(n)
			*d = &v
			return nil
		}
	case *bool:
		if binary && fd.DataTypeOID == pgtype.BoolOID && len(src) == 1 {
			*d = src[0] != 0
			return nil
		}
	case *time.Time:
		if t, ok := binaryTime(fd, src); ok {
			*d = t
			return nil
		}
	case **time.Time:
		if src == nil {
			*d = nil
			return nil
		}
		if t, ok := binaryTime(fd, src); ok {
			*d = &t
			return nil
		}
	}
	return r.types.Scan(fd.DataTypeOID, fd.Format, src, dest)
}

// textTable holds the strings of a round trip's texts, found by a hash (FNV-1a) of
// their bytes with open addressing. Tables are reused (Store.texts) and cleared
// before they go back, so that they hold no string of a request that ended.
type textTable struct {
	slots [128]string
	n     int
}

// internedText is the longest text looked for among those read before: names, states
// and image references are shorter; a reason or a message seldom repeats.
// internedTexts is how many a table takes, three quarters of its slots, so that a
// search always ends at an empty one.
const (
	internedText  = 64
	internedTexts = 96
)

// text is src as a string: the string read before when one was equal.
func (t *textTable) text(src []byte) string {
	if len(src) == 0 || len(src) > internedText {
		return string(src)
	}
	h := uint32(2166136261)
	for _, c := range src {
		h = (h ^ uint32(c)) * 16777619
	}
	for i := h; ; i++ {
		slot := &t.slots[i%uint32(len(t.slots))]
		switch {
		case *slot == string(src):
			return *slot
		case *slot != "":
			continue
		case t.n == internedTexts:
			return string(src)
		}
		*slot = string(src)
		t.n++
		return *slot
	}
}

func (t *textTable) reset() {
	if t.n > 0 {
		clear(t.slots[:])
		t.n = 0
	}
}

// binaryInt decodes an integer column sent in binary (big-endian); ok is false for
// anything else, and for NULL.
func binaryInt(fd pgconn.FieldDescription, src []byte) (n int64, ok bool) {
	if fd.Format != pgtype.BinaryFormatCode {
		return 0, false
	}
	switch {
	case fd.DataTypeOID == pgtype.Int8OID && len(src) == 8:
		return int64(binary.BigEndian.Uint64(src)), true
	case fd.DataTypeOID == pgtype.Int4OID && len(src) == 4:
		return int64(int32(binary.BigEndian.Uint32(src))), true
	case fd.DataTypeOID == pgtype.Int2OID && len(src) == 2:
		return int64(int16(binary.BigEndian.Uint16(src))), true
	}
	return 0, false
}

// Binary timestamps count microseconds from 2000-01-01 UTC, pgEpochSeconds after
// 1970-01-01; the largest and smallest stand for infinity, which pgx refuses as a
// time.Time.
const (
	pgEpochSeconds     = 946_684_800
	pgInfinity         = math.MaxInt64
	pgNegativeInfinity = math.MinInt64
)

// binaryTime decodes a timestamptz column sent in binary, in the local time zone as pgx
// and gorm's reads have it; ok is false for anything else, for NULL and for infinities.
func binaryTime(fd pgconn.FieldDescription, src []byte) (t time.Time, ok bool) {
	if fd.Format != pgtype.BinaryFormatCode || len(src) != 8 ||
		fd.DataTypeOID != pgtype.TimestamptzOID {
		return time.Time{}, false
	}
	us := int64(binary.BigEndian.Uint64(src))
	if us == pgInfinity || us == pgNegativeInfinity {
		return time.Time{}, false
	}
	return time.Unix(pgEpochSeconds+us/1_000_000, us%1_000_000*1_000), true
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

// driverRows scans a driver's rows, each read into values (reused from row to row).
// A field takes a text (*string) or is a sql.Scanner after scanDest: what readRows'
// reads on SQLite have, whose rows are texts (one json_array() each, or a name).
type driverRows struct {
	driver.Rows
	values []driver.Value
	err    error
}

func (r *driverRows) Next() bool {
	if r.err != nil {
		return false
	}
	if err := r.Rows.Next(r.values); err != nil {
		if err != io.EOF {
			r.err = err
		}
		return false
	}
	return true
}

func (r *driverRows) Scan(dest ...any) error {
	if len(dest) != len(r.values) {
		return fmt.Errorf("scan %d columns into %d fields", len(r.values), len(dest))
	}
	for i, d := range dest {
		if p, ok := d.(*string); ok {
			v, ok := r.values[i].(string)
			if !ok {
				return fmt.Errorf("scan column %d: want text, got %T", i, r.values[i])
			}
			*p = v
			continue
		}
		sc, ok := scanDest(d).(sql.Scanner)
		if !ok {
			return fmt.Errorf("scan column %d: cannot scan into %T", i, d)
		}
		if err := sc.Scan(r.values[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}
