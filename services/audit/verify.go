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
// naming the first event that was altered, or that follows a removed or reordered one;
// or, given anchors recorded earlier, the first anchored event that is no longer in the
// chain as it was: the newest events were cut off, or the chain rebuilt after them.
func (l *Log) Verify(ctx context.Context, anchors ...Anchor) (Report, error) {
	want := make(map[int64]string, len(anchors))
	newest := Anchor{}
	for _, a := range anchors {
		if h, ok := want[a.ID]; ok && h != a.Hash {
			return Report{}, fmt.Errorf("verify audit log: two anchors name event %d with different hashes", a.ID)
		}
		want[a.ID] = a.Hash
		if a.ID > newest.ID {
			newest = a
		}
	}
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
			if h, ok := want[e.ID]; ok && h != e.Hash {
				return r, &Break{EventID: e.ID, Reason: fmt.Sprintf("its hash is not %s, which was recorded for it: the log was rebuilt from here on", h)}
			}
			r.Events++
			r.LastID = e.ID
			r.Head = e.Hash
		}
		if len(events) < batch {
			if newest.ID > r.LastID {
				return r, &Break{EventID: newest.ID, Reason: fmt.Sprintf("events %d to %d are missing: the log ends at event %d, but event %d was recorded with hash %s; its newest events were removed",
					r.LastID+1, newest.ID, r.LastID, newest.ID, newest.Hash)}
			}
			return r, nil
		}
	}
}
