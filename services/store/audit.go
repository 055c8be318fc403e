package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// auditLock is the PostgreSQL advisory lock key that serialises appends to the audit chain
// across replicas: each event needs the hash of the one before it.
const auditLock = 7_426_800_002

// AppendAuditEvents adds events to the end of the hash chain in one transaction. Under a
// lock it reads the last event, then numbers each new event after it, sets its PrevHash and
// lets seal compute its Hash. Inside an InTx transaction the lock is held until that
// transaction ends, so the chain stays in commit order.
func (s *Store) AppendAuditEvents(ctx context.Context, events []*models.AuditEvent, seal func(*models.AuditEvent)) error {
	if len(events) == 0 {
		return nil
	}
	err := s.with(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == migrations.Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", auditLock).Error; err != nil {
				return err
			}
		}
		var last models.AuditEvent
		if err := tx.Select("id", "hash").Order("id DESC").Limit(1).Find(&last).Error; err != nil {
			return err
		}
		for _, e := range events {
			e.ID = last.ID + 1
			e.PrevHash = last.Hash
			seal(e)
			last = *e
		}
		return tx.CreateInBatches(events, 100).Error
	})
	if err != nil {
		return fmt.Errorf("append %d audit events: %w", len(events), translate(err))
	}
	return nil
}

// AuditFilter selects audit events; zero fields select everything. Since is inclusive,
// Until exclusive.
type AuditFilter struct {
	Actor     string
	Action    string
	SourceIP  string
	ProjectID *int64
	// ObjectTypes keeps events about any of these kinds of object ("team", "user"…).
	ObjectTypes []string
	ObjectID    string
	Since       time.Time
	Until       time.Time
}

func (f AuditFilter) apply(q *gorm.DB) *gorm.DB {
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.SourceIP != "" {
		q = q.Where("source_ip = ?", f.SourceIP)
	}
	if f.ProjectID != nil {
		q = q.Where("project_id = ?", *f.ProjectID)
	}
	if len(f.ObjectTypes) > 0 {
		q = q.Where("object_type IN ?", f.ObjectTypes)
	}
	if f.ObjectID != "" {
		q = q.Where("object_id = ?", f.ObjectID)
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		q = q.Where("at < ?", f.Until.UTC())
	}
	return q
}

// AuditEventsBefore returns up to limit events matching f with an id below beforeID
// (0: from the newest), newest first: the pages of the audit page.
func (s *Store) AuditEventsBefore(ctx context.Context, f AuditFilter, beforeID int64, limit int) ([]models.AuditEvent, error) {
	q := f.apply(s.with(ctx).Model(&models.AuditEvent{}))
	if beforeID > 0 {
		q = q.Where("id < ?", beforeID)
	}
	var out []models.AuditEvent
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list audit events before %d: %w", beforeID, err)
	}
	return out, nil
}

// AuditEventsAfter returns up to limit events matching f with an id above afterID, oldest
// first: the order of the chain, for verification and export.
func (s *Store) AuditEventsAfter(ctx context.Context, f AuditFilter, afterID int64, limit int) ([]models.AuditEvent, error) {
	q := f.apply(s.with(ctx).Model(&models.AuditEvent{})).Where("id > ?", afterID)
	var out []models.AuditEvent
	if err := q.Order("id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list audit events after %d: %w", afterID, err)
	}
	return out, nil
}

// CountAuditEvents returns how many events match f.
func (s *Store) CountAuditEvents(ctx context.Context, f AuditFilter) (int64, error) {
	var n int64
	if err := f.apply(s.with(ctx).Model(&models.AuditEvent{})).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count audit events: %w", err)
	}
	return n, nil
}
