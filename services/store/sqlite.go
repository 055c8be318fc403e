package store

import (
	"database/sql"
	"errors"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteTimeParams are the DSN parameters under which the SQLite driver writes and reads
// times in the stored form of gantry.db ("2006-01-02 15:04:05.999999999-07:00", the form
// of the glebarez/go-sqlite driver Gantry used before, so older databases read the same
// and a time compares with a stored one as text) and reads them back in UTC. Every
// connection to gantry.db must carry them.
const SQLiteTimeParams = "_time_format=sqlite&_timezone=UTC"

// sqliteDialector is gorm's view of SQLite over modernc.org/sqlite's own database/sql
// driver, which keeps a prepared statement compiled between runs. Only what the store
// uses is here: the schema is made by the SQL of migrations/, not by gorm. With
// prepared, queries (not Exec) run through statements kept compiled: see preparedPool,
// and keptConn for readRows.
type sqliteDialector struct {
	dsn      string
	prepared bool
}

func (sqliteDialector) Name() string { return "sqlite" }

func (d sqliteDialector) Initialize(db *gorm.DB) error {
	if d.prepared {
		db.ConnPool = newPreparedPool(sql.OpenDB(keptConnector{dsn: d.dsn}))
	} else {
		conn, err := sql.Open("sqlite", d.dsn)
		if err != nil {
			return err
		}
		db.ConnPool = conn
	}
	// The engine (3.50) has RETURNING, so a Create reads back generated ids in its INSERT.
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses:        []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses:        []string{"UPDATE", "SET", "FROM", "WHERE", "RETURNING"},
		DeleteClauses:        []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		LastInsertIDReversed: true,
	})
	db.ClauseBuilders["LIMIT"] = literalLimit
	db.ClauseBuilders["FOR"] = withoutRowLocks
	return nil
}

// withoutRowLocks drops FOR UPDATE and the like, which SQLite does not have: a write
// transaction holds the database's one write lock from its start (BEGIN IMMEDIATE).
func withoutRowLocks(c clause.Clause, b clause.Builder) {
	if _, ok := c.Expression.(clause.Locking); !ok {
		c.Build(b)
	}
}

// Migrator answers HasTable and HasColumn from SQLite's catalogue; the rest is gorm's
// generic migrator, which the store does not use.
func (d sqliteDialector) Migrator(db *gorm.DB) gorm.Migrator {
	return sqliteMigrator{migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d}}}
}

func (sqliteDialector) DataTypeOf(field *schema.Field) string {
	switch field.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		if field.AutoIncrement {
			return "integer PRIMARY KEY AUTOINCREMENT"
		}
		return "integer"
	case schema.Float:
		return "real"
	case schema.String:
		return "text"
	case schema.Time:
		return "datetime"
	case schema.Bytes:
		return "blob"
	}
	return string(field.DataType)
}

func (sqliteDialector) DefaultValueOf(field *schema.Field) clause.Expression {
	if field.AutoIncrement {
		return clause.Expr{SQL: "NULL"}
	}
	return clause.Expr{SQL: "DEFAULT"}
}

func (sqliteDialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) { w.WriteByte('?') }

// QuoteTo quotes each dot-separated part of an identifier in backticks, doubling any
// backtick inside; a part quoted already is written as it is.
func (sqliteDialector) QuoteTo(w clause.Writer, name string) {
	for i, part := range strings.Split(name, ".") {
		if i > 0 {
			w.WriteByte('.')
		}
		if len(part) >= 2 && part[0] == '`' && part[len(part)-1] == '`' {
			w.WriteString(part)
			continue
		}
		w.WriteByte('`')
		w.WriteString(strings.ReplaceAll(part, "`", "``"))
		w.WriteByte('`')
	}
}

func (sqliteDialector) Explain(sql string, vars ...any) string {
	return logger.ExplainSQL(sql, nil, `"`, vars...)
}

func (sqliteDialector) SavePoint(tx *gorm.DB, name string) error {
	return tx.Exec("SAVEPOINT " + name).Error
}

func (sqliteDialector) RollbackTo(tx *gorm.DB, name string) error {
	return tx.Exec("ROLLBACK TO SAVEPOINT " + name).Error
}

// Translate maps constraint failures to gorm's errors, as gorm's PostgreSQL dialector
// does, and translate maps those to the store's.
func (sqliteDialector) Translate(err error) error {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return gorm.ErrDuplicatedKey
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return gorm.ErrForeignKeyViolated
	}
	return err
}

type sqliteMigrator struct{ migrator.Migrator }

func (m sqliteMigrator) HasTable(value any) bool {
	var n int64
	m.RunWithValue(value, func(stmt *gorm.Statement) error {
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", stmt.Table).Scan(&n).Error
	})
	return n > 0
}

func (m sqliteMigrator) HasColumn(value any, field string) bool {
	var n int64
	m.RunWithValue(value, func(stmt *gorm.Statement) error {
		name := field
		if stmt.Schema != nil {
			if f := stmt.Schema.LookUpField(field); f != nil {
				name = f.DBName
			}
		}
		return m.DB.Raw("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", stmt.Table, name).Scan(&n).Error
	})
	return n > 0
}
