package store

import (
	"errors"

	"gorm.io/gorm"
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique name or key is already taken, or a reference is missing.
	ErrConflict = errors.New("conflict")
	// ErrStale: the record changed since it was read (a state or fencing check failed).
	ErrStale = errors.New("stale")
	// ErrSchemaTooNew: the database was migrated by a newer gantry.
	ErrSchemaTooNew = errors.New("database schema is newer than this gantry")
)

// translate maps driver errors to the store's sentinels, keeping the original text.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return errors.Join(ErrNotFound, err)
	case errors.Is(err, gorm.ErrDuplicatedKey), errors.Is(err, gorm.ErrForeignKeyViolated):
		return errors.Join(ErrConflict, err)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
