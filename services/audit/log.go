package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Log appends to, reads and verifies the audit log.
type Log struct {
	store *store.Store
	now   func() time.Time
}

// New returns the audit log kept in st; now is the clock that stamps events.
func New(st *store.Store, now func() time.Time) *Log {
	return &Log{store: st, now: now}
}

// In returns the log bound to tx, so that an event commits or rolls back with the change it records.
func (l *Log) In(tx *store.Store) *Log {
	return &Log{store: tx, now: l.now}
}

// Entry is what a service says happened; the actor comes from the context.
type Entry struct {
	Action     string // object.verb, e.g. "login.failed", "token.created", "role.granted"
	ObjectType string
	ObjectID   string
	ProjectID  *int64
	Detail     any // what changed; marshalled to JSON, nil for nothing
}

// Append records one event by the actor of ctx.
func (l *Log) Append(ctx context.Context, e Entry) error {
	return l.AppendAll(ctx, []Entry{e})
}

// AppendAll records events by the actor of ctx, in order, in one transaction.
func (l *Log) AppendAll(ctx context.Context, entries []Entry) error {
	actor := ActorFrom(ctx)
	events := make([]*models.AuditEvent, len(entries))
	for i, e := range entries {
		ev, err := l.event(actor, e)
		if err != nil {
			return err
		}
		events[i] = ev
	}
	return l.store.AppendAuditEvents(ctx, events, func(e *models.AuditEvent) { e.Hash = Hash(e) })
}

func (l *Log) event(a Actor, e Entry) (*models.AuditEvent, error) {
	if e.Action == "" {
		return nil, errors.New("append audit event: action is empty")
	}
	detail := ""
	if e.Detail != nil {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return nil, fmt.Errorf("append audit event %s: encode detail: %w", e.Action, err)
		}
		detail = string(b)
	}
	actorType := a.Type
	if actorType == "" {
		actorType = models.ActorSystem
	}
	return &models.AuditEvent{
		// PostgreSQL keeps microseconds: stamp no finer, or the hash would not survive a round trip.
		At:         l.now().UTC().Truncate(time.Microsecond),
		Actor:      clean(a.Name, 200),
		ActorType:  clean(actorType, 20),
		Action:     clean(e.Action, 100),
		ObjectType: clean(e.ObjectType, 100),
		ObjectID:   clean(e.ObjectID, 200),
		ProjectID:  e.ProjectID,
		Detail:     detail,
		SourceIP:   clean(a.IP, 64),
		RequestID:  clean(a.RequestID, 64),
	}, nil
}

// clean makes s storable on both databases (valid UTF-8, no NUL) and at most max bytes:
// actors and object ids may come straight from a request, e.g. the username of a failed login.
func clean(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
