package audit

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Query is a filter as a person types it, on the audit page or the command line.
type Query struct {
	Actor   string
	Action  string
	Project string // project name
	Since   string // date (2026-03-01) or RFC 3339 time, inclusive
	Until   string // same forms, exclusive; a bare date means up to the end of that day
}

// Filter turns q into a store filter; a field it cannot use is a *models.FieldError.
func (l *Log) Filter(ctx context.Context, q Query) (store.AuditFilter, error) {
	f := store.AuditFilter{Actor: strings.TrimSpace(q.Actor), Action: strings.TrimSpace(q.Action)}
	if name := strings.TrimSpace(q.Project); name != "" {
		p, err := l.store.ProjectByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return f, models.Invalid("project", "no project is called %q", name)
		}
		if err != nil {
			return f, err
		}
		f.ProjectID = &p.ID
	}
	var err error
	if f.Since, err = parseTime("since", q.Since, false); err != nil {
		return f, err
	}
	if f.Until, err = parseTime("until", q.Until, true); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, models.Invalid("until", "must be after since")
	}
	return f, nil
}

func parseTime(field, s string, endOfDay bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if endOfDay {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, models.Invalid(field, "%q is not a date (2026-03-01) or a time (2026-03-01T09:30:00Z)", s)
}
