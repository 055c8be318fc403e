package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gantry-gpu/gantry/migrations"
)

// Config says which database to open: PostgreSQL when DatabaseURL is set, else SQLite in DataDir.
type Config struct {
	DataDir     string
	DatabaseURL string
	// MaxConns bounds the PostgreSQL connections this process holds (default
	// DefaultMaxConns): without a bound, a burst of agents would open one each and
	// run into the server's max_connections. SQLite ignores it.
	MaxConns int
}

// DefaultMaxConns is the PostgreSQL pool size when Config.MaxConns is 0.
const DefaultMaxConns = 20

// sqliteReaders is how many read-only connections a SQLite store opens beside its writer.
const sqliteReaders = 4

// Store wraps the database handle. It is safe for concurrent use.
type Store struct {
	db *gorm.DB
	// reads serves getters that need no transaction of their own. On SQLite it is a
	// pool of read-only connections beside the one writer: in WAL mode readers never
	// wait for the writer, so a long scan (a roll-up, a chart, a page) holds up no
	// heartbeat, and a write waits only for other writes; its queries run through
	// statements kept compiled (preparedPool). On PostgreSQL it is db; inside InTx,
	// the transaction.
	reads *gorm.DB
	// pg is PostgreSQL's pool outside a transaction, for readRows; nil on SQLite and
	// inside InTx.
	pg *sql.DB
	// sqliteReads is SQLite's read pool outside a transaction, for readRows; nil on
	// PostgreSQL and inside InTx.
	sqliteReads *sql.DB
	// texts are readNative's tables of a round trip's strings, for reuse.
	texts *sync.Pool
	// sqlTexts keeps the SQL of unfiltered lists (listedJobsSQL), sign-ins
	// (signInSQL) and job activity (jobActivitySQL), by what each depends on;
	// shared with the Stores of InTx.
	sqlTexts *sync.Map
	dialect  string
	inTx     bool
}

// SQLiteFile is the database file inside the data directory.
const SQLiteFile = "gantry.db"

// Open connects to the database of cfg. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, nil)
}

// open is Open with tune applied to each PostgreSQL connection's configuration before
// it connects (nil: none), for tests that trace statements or wrap the connection.
func open(ctx context.Context, cfg Config, tune func(*pgx.ConnConfig)) (*Store, error) {
	if cfg.DatabaseURL != "" {
		dsn, err := postgresDSN(cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		opts := []stdlib.OptionOpenDB{stdlib.OptionShouldPing(pingBeforeReuse)}
		if tune != nil {
			opts = append(opts, stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
				tune(c)
				return nil
			}))
		}
		db, err := gorm.Open(postgres.New(postgres.Config{DSN: dsn, OptionOpenDB: opts}), gormConfig())
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %s", Redact(cfg.DatabaseURL), oneLine(err))
		}
		db.ClauseBuilders["LIMIT"] = literalLimit
		sqlDB, err := db.DB()
		if err != nil {
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %s", Redact(cfg.DatabaseURL), oneLine(err))
		}
		conns := cfg.MaxConns
		if conns <= 0 {
			conns = DefaultMaxConns
		}
		sqlDB.SetMaxOpenConns(conns)
		sqlDB.SetMaxIdleConns(conns)
		s := &Store{db: db, reads: db, pg: sqlDB, texts: &sync.Pool{}, sqlTexts: &sync.Map{}, dialect: migrations.Postgres}
		if err := s.Ping(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("connect to PostgreSQL at %s: %s", Redact(cfg.DatabaseURL), oneLine(err))
		}
		return s, nil
	}
	if err := ensureWritableDir(cfg.DataDir); err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.DataDir, SQLiteFile)
	// Transactions begin IMMEDIATE: one that reads and then writes while another process
	// (gantry serve and a gantry admin command) wrote in between would fail at once with
	// SQLITE_BUSY, which no busy timeout retries; taking the write lock first waits instead.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate&" + SQLiteTimeParams
	db, err := gorm.Open(sqliteDialector{dsn: dsn}, gormConfig())
	if err != nil {
		return nil, fmt.Errorf("open SQLite database %s: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open SQLite database %s: %w", path, err)
	}
	// One connection: SQLite has one writer, and a single connection never meets SQLITE_BUSY
	// on a read-to-write upgrade inside a transaction.
	sqlDB.SetMaxOpenConns(1)
	reads, err := gorm.Open(sqliteDialector{dsn: "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)&" + SQLiteTimeParams, prepared: true}, gormConfig())
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open SQLite database %s for reading: %w", path, err)
	}
	readDB, err := reads.DB()
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open SQLite database %s for reading: %w", path, err)
	}
	readDB.SetMaxOpenConns(sqliteReaders)
	readDB.SetMaxIdleConns(sqliteReaders)
	return &Store{db: db, reads: reads, sqliteReads: readDB, sqlTexts: &sync.Map{}, dialect: migrations.SQLite}, nil
}

// gormConfig is the configuration of one gorm handle. Each handle needs its own: gorm
// keeps its dialector, connection pool and callbacks in it, so SQLite's writer and read
// pool opened with one would share the read pool's.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:         logger.Discard,
		TranslateError: true,
		NowFunc:        func() time.Time { return time.Now().UTC() },
	}
}

// postgresDSN checks a postgres:// URL and adds a connect timeout so an unreachable server
// fails fast. The server is the URL's host, or as libpq has it a host parameter: a
// server on the same machine is best reached through its Unix socket's directory
// (postgres://USER@/DATABASE?host=/run/postgresql), which costs less than loopback TCP.
func postgresDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "" {
		return "", fmt.Errorf("invalid --database-url %q: want postgres://USER:PASSWORD@HOST:PORT/DATABASE, or postgres://USER@/DATABASE?host=/run/postgresql for a server's Unix socket (leave it empty for the embedded SQLite in --data-dir)", Redact(raw))
	}
	q := u.Query()
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", "5")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Redact hides the password of a database URL so that it can be shown or logged.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "…" + raw[i:]
		}
		return raw
	}
	return u.Redacted()
}

// oneLine folds a driver's multi-line error (one line per address tried) into one line.
func oneLine(err error) string {
	var parts []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

func ensureWritableDir(dir string) error {
	if dir == "" {
		return errors.New("--data-dir is empty: give a directory for the embedded database")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("data dir %s cannot be created: %w", dir, unwrapPathError(err))
	}
	probe, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable: %w", dir, unwrapPathError(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return sqlDB.PingContext(ctx)
}

// Close releases the database connections.
func (s *Store) Close() error {
	pools := []*gorm.DB{s.db}
	if s.reads != s.db {
		pools = append(pools, s.reads)
	}
	var errs []error
	for _, db := range pools {
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.Close()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// InTx runs fn in one transaction on a Store bound to it; an error from fn rolls back.
// On PostgreSQL a transaction whose BEGIN found its pooled connection dead (the server
// restarted, or ended the session) starts again on another: nothing of it ran. Each
// dead connection tried is dropped, so the tries are bounded by those left open, and
// one new.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	began, err := s.inTxOnce(ctx, fn)
	if s.pg == nil {
		return err
	}
	for tries := s.pg.Stats().OpenConnections + 1; !began && connectionLost(err) && tries > 0 && ctx.Err() == nil; tries-- {
		began, err = s.inTxOnce(ctx, fn)
	}
	return err
}

func (s *Store) inTxOnce(ctx context.Context, fn func(tx *Store) error) (began bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		began = true
		return fn(&Store{db: tx, reads: tx, sqlTexts: s.sqlTexts, dialect: s.dialect, inTx: true})
	})
	return began, err
}

// connectionLost says whether err is PostgreSQL ending the session under a statement
// (an error of severity FATAL) or the connection breaking.
func connectionLost(err error) bool {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Severity == "FATAL"
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// atomically runs fn in a transaction: the caller's, when s is bound to one (so a
// write that is part of a larger one costs no savepoint), else a new one. fn must
// return its errors rather than recover from them.
func (s *Store) atomically(ctx context.Context, fn func(tx *Store) error) error {
	if s.inTx {
		return fn(s)
	}
	return s.InTx(ctx, fn)
}

// with is the handle for writes, and for reads that must see the writer's view.
func (s *Store) with(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// read is the handle for getters: see Store.reads.
func (s *Store) read(ctx context.Context) *gorm.DB { return s.reads.WithContext(ctx) }
