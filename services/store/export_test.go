package store

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// MissingColumns lists the fields of model that have no column in its table.
func (s *Store) MissingColumns(model any) ([]string, error) {
	stmt := s.db.Model(model).Statement
	if err := stmt.Parse(model); err != nil {
		return nil, fmt.Errorf("parse model: %w", err)
	}
	if !s.db.Migrator().HasTable(stmt.Schema.Table) {
		return nil, fmt.Errorf("no table %s", stmt.Schema.Table)
	}
	var missing []string
	for _, f := range stmt.Schema.Fields {
		if f.DBName != "" && !s.db.Migrator().HasColumn(model, f.DBName) {
			missing = append(missing, f.DBName)
		}
	}
	return missing, nil
}

// JobsPlan returns the database's plan of the listed jobs query of f (the jobs query
// with its joins), one line per step.
// On PostgreSQL, sequential scans, bitmap scans and sorts are discouraged first, so
// that a Sort in the plan means no index serves the order, not that the table is small.
func (s *Store) JobsPlan(ctx context.Context, f JobFilter) ([]string, error) {
	var lines []string
	err := s.InTx(ctx, func(tx *Store) error {
		dry, err := listedJobsQuery(tx.db.Session(&gorm.Session{DryRun: true}), f, len(f.Columns) > 0 && tx.dialect == migrations.SQLite, true)
		if err != nil {
			return err
		}
		stmt := dry.Find(&[]ListedJob{}).Statement
		lines, err = tx.plan(stmt.SQL.String(), stmt.Vars...)
		return err
	})
	return lines, err
}

// plan is the database's plan of query, one line per step, in a transaction: on
// PostgreSQL with sequential scans, bitmap scans and sorts discouraged, as JobsPlan says.
func (tx *Store) plan(query string, vars ...any) ([]string, error) {
	explain := "EXPLAIN QUERY PLAN "
	if tx.dialect == migrations.Postgres {
		explain = "EXPLAIN "
		for _, set := range []string{"enable_seqscan", "enable_bitmapscan", "enable_sort"} {
			if err := tx.db.Exec("SET LOCAL " + set + " = off").Error; err != nil {
				return nil, err
			}
		}
	}
	rows, err := tx.db.Raw(explain+query, vars...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	return lines, rows.Err()
}

// ActiveAllocationPlans returns the plans of the reads of allocations that are not
// ended, by the name of their getter; a node's read is planned for node 1.
func (s *Store) ActiveAllocationPlans(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := s.InTx(ctx, func(tx *Store) error {
		for name, query := range map[string]string{
			"ActiveAllocations":         strings.Replace(tx.activeAllocationsSQL(), "node_id = "+tx.param(1), "node_id = 1", 1),
			"ActiveAllocationCounts":    tx.activeAllocationCountsSQL(),
			"ActiveAllocationDevices":   tx.activeAllocationDevicesSQL(),
			"ActiveAllocationsWithJobs": tx.activeAllocationsWithJobsSQL(),
			"ActiveAllocationUses":      tx.activeAllocationUsesSQL(),
		} {
			lines, err := tx.plan(query)
			if err != nil {
				return fmt.Errorf("plan of %s: %w", name, err)
			}
			out[name] = lines
		}
		return nil
	})
	return out, err
}

// PlansOf runs fn in one transaction, so on one connection, and then says how many
// executions of that connection's prepared statements whose text contains text
// PostgreSQL ran on a generic (cached) plan and how many it planned afresh.
func (s *Store) PlansOf(ctx context.Context, text string, fn func(tx *Store) error) (generic, custom int64, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.db.Raw("SELECT COALESCE(SUM(generic_plans), 0), COALESCE(SUM(custom_plans), 0) FROM pg_prepared_statements WHERE strpos(statement, ?) > 0", text).
			Row().Scan(&generic, &custom)
	})
	return generic, custom, err
}

// ScanJSONArray is scanJSONArray, for tests of rows SQLite would not write.
var ScanJSONArray = scanJSONArray

// ScanJSONStrings is scanJSONStrings, for tests of rows SQLite would not write.
var ScanJSONStrings = scanJSONStrings

// AnalyzeJobs has PostgreSQL gather the jobs table's statistics, as autovacuum soon
// would; SQLite is left without, as Gantry leaves it.
func (s *Store) AnalyzeJobs(ctx context.Context) error {
	if s.dialect != migrations.Postgres {
		return nil
	}
	return s.with(ctx).Exec("ANALYZE jobs").Error
}

// OpenCounting is Open on PostgreSQL, counting the round trips of the store's
// statements: a query is one, and so is a batch of them (pgx sends a batch in one
// write and reads its answers after it).
func OpenCounting(ctx context.Context, cfg Config) (*Store, *RoundTrips, error) {
	n := &RoundTrips{}
	s, err := open(ctx, cfg, func(c *pgx.ConnConfig) { c.Tracer = n })
	return s, n, err
}

// RoundTrips counts statements sent alone and batches.
type RoundTrips struct{ n atomic.Int64 }

// Count is how many round trips there were so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// ReadRow scans the first row of query into dest as the reads of every request do
// (readRows: on PostgreSQL, from pgx's wire values).
func (s *Store) ReadRow(ctx context.Context, query string, dest ...any) error {
	return s.readRows(ctx, read{query: query, scan: func(rows rowScanner) error {
		if !rows.Next() {
			return ErrNotFound
		}
		return rows.Scan(dest...)
	}})
}

// JobColumns and ProjectColumns are the columns JobAndProject reads.
var JobColumns, ProjectColumns = jobColumns, projectColumns

var AllocationColumns = allocationColumns

// PasswordHashReads counts the users that the store's gorm queries read with a
// password hash, from WatchPasswordHashReads on.
type PasswordHashReads struct{ n atomic.Int64 }

// Count returns how many users were read with their hash.
func (r *PasswordHashReads) Count() int64 { return r.n.Load() }

// WatchPasswordHashReads counts, after each gorm query of s, the users it read with a
// non-empty password hash (call it before the store is shared between goroutines).
func (s *Store) WatchPasswordHashReads() (*PasswordHashReads, error) {
	r := &PasswordHashReads{}
	dbs := []*gorm.DB{s.db}
	if s.reads.Config != s.db.Config {
		dbs = append(dbs, s.reads)
	}
	for _, db := range dbs {
		err := db.Callback().Query().After("gorm:query").Register("test:password_hash_reads", func(db *gorm.DB) {
			r.n.Add(usersWithHash(db.Statement.ReflectValue))
		})
		if err != nil {
			return nil, fmt.Errorf("watch password hash reads: %w", err)
		}
	}
	return r, nil
}

// usersWithHash counts the models.User values in v (a user, or a slice or array of
// them, behind pointers) whose PasswordHash is set.
func usersWithHash(v reflect.Value) int64 {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		v = v.Elem()
	}
	if !v.IsValid() {
		return 0
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		var n int64
		for i := range v.Len() {
			n += usersWithHash(v.Index(i))
		}
		return n
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[models.User]() && v.FieldByName("PasswordHash").String() != "" {
			return 1
		}
	}
	return 0
}

// GormHandles says whether SQLite's writer and read pool share gorm's configuration,
// and whether each handle's dialector keeps statements prepared.
func (s *Store) GormHandles() (shared, writerPrepared, readerPrepared bool) {
	w, _ := s.db.Dialector.(sqliteDialector)
	r, _ := s.reads.Dialector.(sqliteDialector)
	return s.db.Config == s.reads.Config, w.prepared, r.prepared
}

// OpenCutting is Open on PostgreSQL with a Cutter: once armed, the next statement or
// batch sent is sent on a connection that PostgreSQL has just ended (cut ends the
// session of the pid it is given), as when the server restarts under a request.
func OpenCutting(ctx context.Context, cfg Config, cut func(pid uint32) error) (*Store, *Cutter, error) {
	c := &Cutter{cut: cut}
	s, err := open(ctx, cfg, func(cc *pgx.ConnConfig) { cc.Tracer = c })
	return s, c, err
}

// OpenStalling is Open on PostgreSQL whose connections stall after each write, as a
// process under load is descheduled: pgx then starts reading in the background, and
// that read is left waiting on the socket once the answer is in.
func OpenStalling(ctx context.Context, cfg Config, stall time.Duration) (*Store, error) {
	return open(ctx, cfg, func(c *pgx.ConnConfig) {
		dial := c.DialFunc
		c.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if tcp, ok := conn.(*net.TCPConn); ok {
				return stallingConn{tcp, stall}, err
			}
			return conn, err
		}
	})
}

// stallingConn stalls after each write; it is still a socket to look into.
type stallingConn struct {
	*net.TCPConn
	stall time.Duration
}

func (c stallingConn) Write(b []byte) (int, error) {
	n, err := c.TCPConn.Write(b)
	time.Sleep(c.stall)
	return n, err
}

// Cutter ends the session under the next statement once armed.
type Cutter struct {
	cut   func(pid uint32) error
	armed atomic.Bool
	cuts  atomic.Int64
	loud  atomic.Int64
}

// Arm has the next statement or batch find its connection ended.
func (c *Cutter) Arm() { c.armed.Store(true) }

// Cuts is how many sessions were ended under a statement.
func (c *Cutter) Cuts() int64 { return c.cuts.Load() }

// Loud is how many of the connections cut had looked to the pool as if the server
// had spoken on them before the cut: none should, being alive.
func (c *Cutter) Loud() int64 { return c.loud.Load() }

func (c *Cutter) cutUnder(conn *pgx.Conn) {
	if !c.armed.CompareAndSwap(true, false) {
		return
	}
	if serverSpoke(conn.PgConn().Conn()) {
		c.loud.Add(1)
	}
	if c.cut(conn.PgConn().PID()) != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); !serverSpoke(conn.PgConn().Conn()); {
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.cuts.Add(1)
}

func (c *Cutter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.cutUnder(conn)
	return ctx
}

func (c *Cutter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *Cutter) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.cutUnder(conn)
	return ctx
}

func (c *Cutter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *Cutter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// NodeColumns are the columns the node lists read.
var NodeColumns = nodeColumns
