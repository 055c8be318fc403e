package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
)

// migrationLock is the PostgreSQL advisory lock key that serialises migrating replicas.
const migrationLock = 7_426_800_001

// SchemaStatus says where the database stands against this binary's migrations.
type SchemaStatus struct {
	Current int `json:"current"`
	Latest  int `json:"latest"`
}

// Ready reports whether the schema is exactly what this binary expects.
func (s SchemaStatus) Ready() bool { return s.Current == s.Latest }

// SchemaStatus reads the applied version; a database never migrated is at 0.
func (s *Store) SchemaStatus(ctx context.Context) (SchemaStatus, error) {
	all, err := migrations.All()
	if err != nil {
		return SchemaStatus{}, err
	}
	st := SchemaStatus{Latest: all[len(all)-1].Version}
	if !s.db.Migrator().HasTable("schema_migrations") {
		return st, nil
	}
	var cur *int
	if err := s.with(ctx).Raw("SELECT MAX(version) FROM schema_migrations").Scan(&cur).Error; err != nil {
		return st, fmt.Errorf("read schema version: %w", err)
	}
	if cur != nil {
		st.Current = *cur
	}
	return st, nil
}

// Migrate applies every pending migration, each in its own transaction, and returns the
// versions it applied. A database newer than this binary is refused with ErrSchemaTooNew.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	all, err := migrations.All()
	if err != nil {
		return nil, err
	}
	ts := "DATETIME"
	if s.dialect == migrations.Postgres {
		ts = "TIMESTAMPTZ"
	}
	create := "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at " + ts + " NOT NULL)"
	if err := s.with(ctx).Exec(create).Error; err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	st, err := s.SchemaStatus(ctx)
	if err != nil {
		return nil, err
	}
	if st.Current > st.Latest {
		return nil, fmt.Errorf("%w: the database is at version %d, this gantry knows up to %d; run a newer gantry", ErrSchemaTooNew, st.Current, st.Latest)
	}
	var applied []int
	for _, m := range all {
		done, err := s.applyOne(ctx, m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
}

// applyOne runs m unless it is applied already; the check and the run share one transaction
// (under an advisory lock on PostgreSQL) so that two replicas never apply it twice.
func (s *Store) applyOne(ctx context.Context, m migrations.Migration) (bool, error) {
	sql, err := m.SQL(s.dialect)
	if err != nil {
		return false, err
	}
	applied := false
	err = s.with(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == migrations.Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLock).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if sql != "" {
			if err := tx.Exec(sql).Error; err != nil {
				return err
			}
		}
		applied = true
		return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", m.Version, m.Name, time.Now().UTC()).Error
	})
	if err != nil {
		return false, fmt.Errorf("apply migration %d (%s): %w", m.Version, m.Name, err)
	}
	return applied, nil
}
