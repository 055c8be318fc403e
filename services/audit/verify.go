package audit

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/services/store"
)

// batch is how many events Verify and Export read per query.
const batch = 5000

// Report sums up a verified chain.
type Report struct {
	Events int64  // how many events were checked
	LastID int64  // id of the newest event
	Head   string // hash of the newest event: record it elsewhere to detect a cut-off tail
}

// Break is the first place where the chain does not hold.
type Break struct {
	EventID int64
	Reason  string
}

func (b *Break) Error() string {
	return fmt.Sprintf("audit log broken at event %d: %s", b.EventID, b.Reason)
}

// Verify walks the whole chain, oldest first, recomputing every hash. It returns a *Break
// naming the first event that was altered, or that follows a removed or reordered one.
func (l *Log) Verify(ctx context.Context) (Report, error) {
	var r Report
	for {
		events, err := l.store.AuditEventsAfter(ctx, store.AuditFilter{}, r.LastID, batch)
		if err != nil {
			return r, fmt.Errorf("verify audit log: %w", err)
		}
		for i := range events {
			e := &events[i]
			switch {
			case e.ID != r.LastID+1:
				return r, &Break{EventID: e.ID, Reason: fmt.Sprintf("events %d to %d are missing: removed or renumbered", r.LastID+1, e.ID-1)}
			case e.PrevHash != r.Head:
				return r, &Break{EventID: e.ID, Reason: fmt.Sprintf("its previous hash is not the hash of event %d: an event before it was altered, removed or reordered", r.LastID)}
			case Hash(e) != e.Hash:
				return r, &Break{EventID: e.ID, Reason: "its contents do not match its hash: the row was altered"}
			}
			r.Events++
			r.LastID = e.ID
			r.Head = e.Hash
		}
		if len(events) < batch {
			return r, nil
		}
	}
}
