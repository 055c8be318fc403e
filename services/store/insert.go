package store

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
)

// maxParamsPerInsert keeps one multi-row INSERT on PostgreSQL well under its
// 65,535 bound parameters.
const maxParamsPerInsert = 15000

// insertRows writes n rows of columns into table, values(i) giving row i's values
// in column order. On PostgreSQL a multi-row INSERT carries many rows per round
// trip. On SQLite (no round trips) one prepared single-row INSERT runs per row:
// the pure-Go driver matches parameters to arguments in time quadratic in their
// number, so a 500-row INSERT of 29 columns spent more time binding than writing.
// Run it inside a transaction, or the rows commit one by one.
func (s *Store) insertRows(ctx context.Context, table string, columns []string, n int, values func(i int) []any) error {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", len(columns)), ",") + ")"
	head := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES "
	if s.dialect != migrations.Postgres {
		stmt, err := s.with(ctx).Statement.ConnPool.PrepareContext(ctx, head+row)
		if err != nil {
			return fmt.Errorf("prepare insert into %s: %w", table, err)
		}
		defer stmt.Close()
		for i := range n {
			if _, err := stmt.ExecContext(ctx, values(i)...); err != nil {
				return fmt.Errorf("insert into %s: %w", table, s.driverError(err))
			}
		}
		return nil
	}
	perStatement := max(1, maxParamsPerInsert/len(columns))
	for start := 0; start < n; start += perStatement {
		end := min(start+perStatement, n)
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, (end-start)*len(columns))
		for i := start; i < end; i++ {
			if i > start {
				b.WriteByte(',')
			}
			b.WriteString(row)
			args = append(args, values(i)...)
		}
		if err := translate(s.with(ctx).Exec(b.String(), args...).Error); err != nil {
			return fmt.Errorf("insert into %s: %w", table, err)
		}
	}
	return nil
}

// driverError translates an error of a statement run outside gorm as gorm would,
// so that ErrConflict and the like hold. No error is nil at once: PostgreSQL's
// translator reads an error that is not pgx's through encoding/json, nil included
// (three allocations at each of a request's reads).
func (s *Store) driverError(err error) error {
	if err == nil {
		return nil
	}
	if t, ok := s.db.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	return translate(err)
}
