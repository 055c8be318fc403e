package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Line is one exported event: the JSON Lines schema a SIEM reads.
type Line struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	ActorType  string          `json:"actor_type"`
	Action     string          `json:"action"`
	ObjectType string          `json:"object_type,omitempty"`
	ObjectID   string          `json:"object_id,omitempty"`
	ProjectID  *int64          `json:"project_id,omitempty"`
	Detail     json.RawMessage `json:"detail,omitempty"`
	// DetailMasked says that Detail is shown with secret values masked: Hash is of
	// the detail as stored, which held them.
	DetailMasked bool   `json:"detail_masked,omitempty"`
	SourceIP     string `json:"source_ip,omitempty"`
	RequestID    string `json:"request_id,omitempty"`
	PrevHash     string `json:"prev_hash"`
	Hash         string `json:"hash"`
}

// LineOf is the export form of e, its detail with secret values masked (maskDetail);
// a detail that is not JSON is exported as a JSON string.
func LineOf(e *models.AuditEvent) Line {
	l := Line{
		ID: e.ID, At: e.At.UTC(), Actor: e.Actor, ActorType: e.ActorType, Action: e.Action,
		ObjectType: e.ObjectType, ObjectID: e.ObjectID, ProjectID: e.ProjectID,
		SourceIP: e.SourceIP, RequestID: e.RequestID, PrevHash: e.PrevHash, Hash: e.Hash,
	}
	detail, masked := maskDetail(e.Detail)
	l.DetailMasked = masked
	if detail != "" {
		if json.Valid([]byte(detail)) {
			l.Detail = json.RawMessage(detail)
		} else {
			l.Detail, _ = json.Marshal(detail)
		}
	}
	return l
}

// Export writes the events matching f as JSON Lines, oldest first, and returns how many.
func (l *Log) Export(ctx context.Context, w io.Writer, f store.AuditFilter) (int64, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var n, after int64
	for {
		events, err := l.store.AuditEventsAfter(ctx, f, after, batch)
		if err != nil {
			return n, fmt.Errorf("export audit log: %w", err)
		}
		for i := range events {
			if err := enc.Encode(LineOf(&events[i])); err != nil {
				return n, fmt.Errorf("export audit log: %w", err)
			}
			n++
			after = events[i].ID
		}
		if len(events) < batch {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export audit log: %w", err)
	}
	return n, nil
}
