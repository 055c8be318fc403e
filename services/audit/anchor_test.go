package audit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A tail cut off behind the log's back still verifies as a chain; the head recorded
// before catches it, and so it does a tail cut off and written anew.
func TestAnchorsCatchACutOffTail(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, cfg store.Config, st *store.Store) {
		ctx := context.Background()
		log := audit.New(st, newClock().now)
		appendN(t, log, 8)
		head, ok, err := log.Head(ctx)
		if err != nil || !ok || head.ID != 8 || len(head.Hash) != 64 {
			t.Fatalf("head = %v %v %v", head, ok, err)
		}
		older := audit.Anchor{ID: 3}
		page, err := log.Events(ctx, store.AuditFilter{}, 4, 1)
		if err != nil || len(page.Events) != 1 {
			t.Fatal(page, err)
		}
		older.Hash = page.Events[0].Hash
		if _, err := log.Verify(ctx, older, head); err != nil {
			t.Fatalf("verify an untouched log against its anchors: %v", err)
		}

		dropTriggers(t, cfg, st)
		storetest.Exec(t, cfg, "DELETE FROM audit_events WHERE id >= 6")
		if r, err := log.Verify(ctx); err != nil || r.LastID != 5 {
			t.Fatalf("without anchors a cut-off tail verifies (that is why anchors exist): %+v %v", r, err)
		}
		var br *audit.Break
		_, err = log.Verify(ctx, older, head)
		if !errors.As(err, &br) || br.EventID != 8 || !strings.Contains(br.Reason, "events 6 to 8 are missing: the log ends at event 5") || !strings.Contains(br.Reason, head.Hash) {
			t.Fatalf("verify a cut-off tail against the head: %v", err)
		}

		appendN(t, log, 3) // the intruder covers the cut with new events
		_, err = log.Verify(ctx, head)
		if !errors.As(err, &br) || br.EventID != 8 || !strings.Contains(br.Reason, "the log was rebuilt from here on") {
			t.Fatalf("verify a rebuilt tail against the head: %v", err)
		}
		if _, err := log.Verify(ctx, head, audit.Anchor{ID: 8, Hash: strings.Repeat("0", 64)}); err == nil || !strings.Contains(err.Error(), "two anchors name event 8") {
			t.Errorf("contradicting anchors: %v", err)
		}
	})
}

func TestParseAnchor(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	if a, err := audit.ParseAnchor("12:" + h); err != nil || a.ID != 12 || a.Hash != h || a.String() != "12:"+h {
		t.Fatalf("parse = %+v %v", a, err)
	}
	for _, bad := range []string{"", "12", "12:" + h[:63], "0:" + h, "x:" + h, "12:" + strings.ToUpper(h), " 12:" + h} {
		if _, err := audit.ParseAnchor(bad); err == nil || !strings.Contains(err.Error(), "is not an") {
			t.Errorf("ParseAnchor(%q) = %v, want it refused", bad, err)
		}
	}
}

// syncBuffer is a buffer the anchor loop writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The server writes the head to its log; verify reads those lines back as anchors.
func TestLoggedAnchorsReadBack(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	log := audit.New(st, newClock().now)
	appendN(t, log, 2)
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		log.LogAnchors(ctx, time.Hour, slog.New(slog.NewJSONHandler(&out, nil)))
	}()
	for !strings.Contains(out.String(), "audit anchor") {
		time.Sleep(time.Millisecond)
	}
	appendN(t, log, 1)
	cancel() // the last head is written on the way out
	<-done
	anchors, err := audit.ReadAnchors(strings.NewReader(out.String()))
	if err != nil || len(anchors) != 2 || anchors[0].ID != 2 || anchors[1].ID != 3 {
		t.Fatalf("anchors read from %q = %+v %v", out.String(), anchors, err)
	}
	if _, err := log.Verify(context.Background(), anchors...); err != nil {
		t.Fatalf("verify against the logged anchors: %v", err)
	}
}
