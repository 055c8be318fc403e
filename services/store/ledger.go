package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// meteredUntilKey is the settings row holding the end of the last metered fleet interval.
const meteredUntilKey = "accounting.metered_until"

// LockMetering takes the metering lock for the rest of the transaction (tx must come from
// InTx) and returns the end of the last metered interval; ok is false before the first run.
// Replicas that meter at once queue here, so no interval is charged twice.
func (s *Store) LockMetering(ctx context.Context) (until time.Time, ok bool, err error) {
	now := time.Now().UTC()
	row := models.Setting{Key: meteredUntilKey, Value: "", UpdatedAt: now}
	if err := s.with(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return time.Time{}, false, fmt.Errorf("lock metering: %w", err)
	}
	// An UPDATE takes the row lock on PostgreSQL and the write lock on SQLite.
	if err := s.with(ctx).Model(&models.Setting{}).Where("key = ?", meteredUntilKey).Update("updated_at", now).Error; err != nil {
		return time.Time{}, false, fmt.Errorf("lock metering: %w", err)
	}
	return s.MeteredUntil(ctx)
}

// MeteredUntil returns the end of the last metered fleet interval; ok is false before the first run.
func (s *Store) MeteredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	var row models.Setting
	err = translate(s.with(ctx).Where("key = ?", meteredUntilKey).First(&row).Error)
	if errors.Is(err, ErrNotFound) || (err == nil && row.Value == "") {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read metering watermark: %w", err)
	}
	t, err := time.Parse(time.RFC3339, row.Value)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read metering watermark %q: %w", row.Value, err)
	}
	return t.UTC(), true, nil
}

// SetMeteredUntil records the end of the last metered fleet interval.
func (s *Store) SetMeteredUntil(ctx context.Context, until time.Time) error {
	err := s.with(ctx).Model(&models.Setting{}).Where("key = ?", meteredUntilKey).
		Updates(map[string]any{"value": until.UTC().Format(time.RFC3339), "updated_at": time.Now().UTC()}).Error
	if err != nil {
		return fmt.Errorf("set metering watermark: %w", err)
	}
	return nil
}

// AppendLedgerEntries inserts charges and adds them to the daily ledger, atomically. The
// ledger is append-only: there is no update.
func (s *Store) AppendLedgerEntries(ctx context.Context, entries []models.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.InTx(ctx, func(tx *Store) error {
		// Already in a transaction: no savepoint per batch (SQLite journals every page of one).
		if err := translate(tx.batch(ctx).CreateInBatches(&entries, 100).Error); err != nil {
			return err
		}
		return tx.addToDailyLedger(ctx, entries)
	})
	if err != nil {
		return fmt.Errorf("append %d ledger entries: %w", len(entries), err)
	}
	return nil
}

// AllocationsMeteredUntil returns, for each allocation that has charges, the end of its last one.
func (s *Store) AllocationsMeteredUntil(ctx context.Context, allocationIDs []int64) (map[int64]time.Time, error) {
	out := make(map[int64]time.Time, len(allocationIDs))
	err := inBatches(allocationIDs, func(batch []int64) error {
		var rows []struct {
			AllocationID int64
			PeriodEnd    dbTime
		}
		err := s.with(ctx).Model(&models.LedgerEntry{}).Select("allocation_id, MAX(period_end) AS period_end").
			Where("allocation_id IN ? AND job_id IS NOT NULL", batch).Group("allocation_id").Scan(&rows).Error
		for _, r := range rows {
			out[r.AllocationID] = time.Time(r.PeriodEnd)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("metered watermarks of allocations: %w", err)
	}
	return out, nil
}

// LedgerEntriesBetween returns the entries of one resource whose period lies inside
// [from, to), with a job (jobs true) or unallocated (jobs false).
func (s *Store) LedgerEntriesBetween(ctx context.Context, resource string, jobs bool, from, to time.Time) ([]models.LedgerEntry, error) {
	q := s.with(ctx).Where("resource = ? AND period_start >= ? AND period_end <= ?", resource, from, to)
	if jobs {
		q = q.Where("job_id IS NOT NULL")
	} else {
		q = q.Where("job_id IS NULL")
	}
	var out []models.LedgerEntry
	if err := q.Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("ledger entries of %s between %s and %s: %w", resource, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return out, nil
}

// batch is a handle for bulk inserts inside a transaction the caller holds.
func (s *Store) batch(ctx context.Context) *gorm.DB {
	return s.with(ctx).Session(&gorm.Session{SkipDefaultTransaction: true})
}
