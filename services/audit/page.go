package audit

import (
	"context"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Page is one page of the audit page, newest first.
type Page struct {
	Events []models.AuditEvent
	Next   int64 // pass as before for the next (older) page; 0 when this is the last
}

// Events returns up to limit events matching f older than before (0: the newest), to
// be shown: their details with secret values masked (maskDetail), so Hash is of what
// was stored, not of the Detail returned.
func (l *Log) Events(ctx context.Context, f store.AuditFilter, before int64, limit int) (Page, error) {
	events, err := l.store.AuditEventsBefore(ctx, f, before, limit+1)
	if err != nil {
		return Page{}, err
	}
	var p Page
	if len(events) > limit {
		events = events[:limit]
		p.Next = events[limit-1].ID
	}
	for i := range events {
		events[i].Detail, _ = maskDetail(events[i].Detail)
	}
	p.Events = events
	return p, nil
}
