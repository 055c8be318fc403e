package audit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/services/store"
)

// Anchor is an event's id and hash recorded outside the database (a server log shipped
// elsewhere, a ticket, a SIEM): the chain proves that nothing before its newest event
// changed, an anchor that nothing after the anchored event was cut off.
type Anchor struct {
	ID   int64
	Hash string
}

func (a Anchor) String() string { return fmt.Sprintf("%d:%s", a.ID, a.Hash) }

var anchorText = regexp.MustCompile(`\b([0-9]+):([0-9a-f]{64})\b`)

// ParseAnchor reads an anchor written as ID:HASH, as verify prints it.
func ParseAnchor(s string) (Anchor, error) {
	m := anchorText.FindStringSubmatch(s)
	if m == nil || m[0] != s {
		return Anchor{}, fmt.Errorf("%q is not an anchor: write it as the event's id, a colon and its 64-digit hex hash, as gantry audit verify prints it", s)
	}
	return anchorOf(m)
}

func anchorOf(m []string) (Anchor, error) {
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || id <= 0 {
		return Anchor{}, fmt.Errorf("%q is not an event id", m[1])
	}
	return Anchor{ID: id, Hash: m[2]}, nil
}

// ReadAnchors finds every ID:HASH in r: a file of anchors, one a line, or the server's
// log, whose "audit anchor" lines carry one each.
func ReadAnchors(r io.Reader) ([]Anchor, error) {
	var out []Anchor
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		for _, m := range anchorText.FindAllStringSubmatch(sc.Text(), -1) {
			a, err := anchorOf(m)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			out = append(out, a)
		}
	}
	return out, sc.Err()
}

// Head is the newest event as an anchor; ok is false for an empty log.
func (l *Log) Head(ctx context.Context) (a Anchor, ok bool, err error) {
	events, err := l.store.AuditEventsBefore(ctx, store.AuditFilter{}, 0, 1)
	if err != nil || len(events) == 0 {
		return Anchor{}, false, err
	}
	return Anchor{ID: events[0].ID, Hash: events[0].Hash}, true, nil
}

// LogAnchors writes the head of the chain to log every interval, and when ctx ends, as
// "audit anchor" with anchor=ID:HASH, so that the head lives wherever the server's log is
// shipped: gantry audit verify --anchors reads such lines back. An unchanged head is
// not repeated.
func (l *Log) LogAnchors(ctx context.Context, every time.Duration, log *slog.Logger) {
	var last Anchor
	write := func(ctx context.Context) {
		a, ok, err := l.Head(ctx)
		switch {
		case err != nil:
			log.Warn("audit anchor not written: cannot read the head of the audit log", slog.Any("err", err))
		case ok && a != last:
			log.Info("audit anchor", slog.String("anchor", a.String()))
			last = a
		}
	}
	write(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			write(context.WithoutCancel(ctx))
			return
		case <-t.C:
			write(ctx)
		}
	}
}
