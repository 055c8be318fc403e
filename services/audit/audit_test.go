package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(1500 * time.Nanosecond)
	return c.t
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)} }

// each runs fn on every backend with the store's config, for tests that go behind its back.
func each(t *testing.T, fn func(t *testing.T, cfg store.Config, st *store.Store)) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			fn(t, cfg, storetest.Open(t, cfg))
		})
	}
}

func as(name string) context.Context {
	return audit.WithActor(context.Background(), audit.Actor{Name: name, Type: models.ActorUser, IP: "192.0.2.7", RequestID: "req-" + name})
}

func appendN(t testing.TB, log *audit.Log, n int) {
	t.Helper()
	for i := range n {
		p := int64(i%3 + 1)
		err := log.Append(as(fmt.Sprintf("user%d", i%2)), audit.Entry{
			Action: "job.submitted", ObjectType: "job", ObjectID: fmt.Sprint(i), ProjectID: &p,
			Detail: map[string]any{"gpus": i, "note": "héllo\x00"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendChainsAndVerifies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		log := audit.New(st, newClock().now)
		if r, err := log.Verify(ctx); err != nil || r.Events != 0 || r.Head != "" {
			t.Fatalf("empty log: %+v %v", r, err)
		}
		appendN(t, log, 7)
		// An actor straight from a request may carry bytes no database column takes.
		bad := audit.WithActor(ctx, audit.Actor{Name: "mal\x00lory\xff" + strings.Repeat("x", 500), Type: models.ActorUser})
		if err := log.Append(bad, audit.Entry{Action: "login.failed"}); err != nil {
			t.Fatalf("append with a hostile actor name: %v", err)
		}
		if err := log.Append(ctx, audit.Entry{Action: "node.lost", ObjectType: "node", ObjectID: "gpu-01"}); err != nil {
			t.Fatal(err)
		}
		r, err := log.Verify(ctx)
		if err != nil {
			t.Fatalf("verify an untouched log: %v", err)
		}
		if r.Events != 9 || r.LastID != 9 || len(r.Head) != 64 {
			t.Fatalf("report = %+v, want 9 events ending at 9", r)
		}
		page, err := log.Events(ctx, store.AuditFilter{}, 0, 3)
		if err != nil || len(page.Events) != 3 || page.Events[0].ID != 9 || page.Next != 7 {
			t.Fatalf("first page = %+v, %v", page, err)
		}
		last := page.Events[0]
		if last.Actor != "system" || last.ActorType != models.ActorSystem || last.Hash != r.Head {
			t.Errorf("an event without a request actor = %+v, want system and the head hash", last)
		}
		if hostile := page.Events[1]; !strings.HasPrefix(hostile.Actor, "mallory\uFFFD") || len(hostile.Actor) > 200 {
			t.Errorf("hostile actor stored as %q", hostile.Actor)
		}
		events, _ := st.AuditEventsAfter(ctx, store.AuditFilter{}, 0, 1)
		e := events[0]
		if e.PrevHash != "" || e.SourceIP != "192.0.2.7" || e.RequestID != "req-user0" || e.At.Nanosecond()%1000 != 0 {
			t.Errorf("first event = %+v", e)
		}
		var detail map[string]any
		if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil || detail["gpus"] != 0.0 {
			t.Errorf("detail %q is not the JSON of what changed", e.Detail)
		}
	})
}

func TestDatabaseRefusesUpdateAndDelete(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, cfg store.Config, st *store.Store) {
		appendN(t, audit.New(st, newClock().now), 2)
		for _, q := range []string{
			"UPDATE audit_events SET actor = 'mallory' WHERE id = 1",
			"DELETE FROM audit_events WHERE id = 2",
		} {
			err := storetest.TryExec(cfg, q)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want the trigger's refusal", q, err)
			}
		}
		if st.Dialect() == "postgres" {
			if err := storetest.TryExec(cfg, "TRUNCATE audit_events"); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("TRUNCATE: %v, want the trigger's refusal", err)
			}
		}
		if _, err := audit.New(st, time.Now).Verify(context.Background()); err != nil {
			t.Fatalf("the refused statements changed the log: %v", err)
		}
	})
}

// dropTriggers removes the append-only guard, as an intruder with database rights would.
func dropTriggers(t *testing.T, cfg store.Config, st *store.Store) {
	if st.Dialect() == "postgres" {
		storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_update_delete ON audit_events")
		return
	}
	storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_update")
	storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_delete")
}

func TestVerifyNamesTheFirstBrokenEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, cfg store.Config, st *store.Store)
		id     int64
		reason string
	}{
		{"altered row", func(t *testing.T, cfg store.Config, _ *store.Store) {
			storetest.Exec(t, cfg, "UPDATE audit_events SET actor = 'nobody' WHERE id = 4")
		}, 4, "the row was altered"},
		{"altered detail", func(t *testing.T, cfg store.Config, _ *store.Store) {
			storetest.Exec(t, cfg, `UPDATE audit_events SET detail = '{"gpus":0}' WHERE id = 6`)
		}, 6, "the row was altered"},
		{"removed row", func(t *testing.T, cfg store.Config, _ *store.Store) {
			storetest.Exec(t, cfg, "DELETE FROM audit_events WHERE id = 3")
		}, 4, "events 3 to 3 are missing"},
		{"removed head of the chain", func(t *testing.T, cfg store.Config, _ *store.Store) {
			storetest.Exec(t, cfg, "DELETE FROM audit_events WHERE id <= 2")
		}, 3, "events 1 to 2 are missing"},
		{"reordered rows", func(t *testing.T, cfg store.Config, _ *store.Store) {
			storetest.Exec(t, cfg, "UPDATE audit_events SET id = -5 WHERE id = 5")
			storetest.Exec(t, cfg, "UPDATE audit_events SET id = 5 WHERE id = 6")
			storetest.Exec(t, cfg, "UPDATE audit_events SET id = 6 WHERE id = -5")
		}, 5, "is not the hash of event 4"},
		{"altered row with its hash recomputed", func(t *testing.T, cfg store.Config, st *store.Store) {
			events, err := st.AuditEventsAfter(context.Background(), store.AuditFilter{}, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			e := events[0]
			e.Action = "job.cancelled"
			storetest.Exec(t, cfg, fmt.Sprintf("UPDATE audit_events SET action = '%s', hash = '%s' WHERE id = 2", e.Action, audit.Hash(&e)))
		}, 3, "is not the hash of event 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			each(t, func(t *testing.T, cfg store.Config, st *store.Store) {
				log := audit.New(st, newClock().now)
				appendN(t, log, 8)
				dropTriggers(t, cfg, st)
				tc.tamper(t, cfg, st)
				_, err := log.Verify(context.Background())
				var br *audit.Break
				if !errors.As(err, &br) {
					t.Fatalf("verify after tampering: %v, want a Break", err)
				}
				if br.EventID != tc.id || !strings.Contains(br.Reason, tc.reason) {
					t.Fatalf("break = %v, want event %d: %s", br, tc.id, tc.reason)
				}
			})
		})
	}
}

func TestConcurrentAppendsKeepOneChain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		// Two logs over the same database stand for two replicas.
		logs := []*audit.Log{audit.New(st, time.Now), audit.New(st, time.Now)}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					errs <- logs[w%2].Append(as(fmt.Sprint("w", w)), audit.Entry{Action: "job.submitted", ObjectID: fmt.Sprint(i)})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		r, err := logs[0].Verify(context.Background())
		if err != nil || r.Events != 40 {
			t.Fatalf("after concurrent appends: %+v %v, want 40 chained events", r, err)
		}
	})
}

func TestAppendCommitsWithTheChange(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		log := audit.New(st, time.Now)
		appendN(t, log, 1)
		boom := errors.New("boom")
		err := st.InTx(ctx, func(tx *store.Store) error {
			if err := log.In(tx).Append(ctx, audit.Entry{Action: "team.created"}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if err := log.Append(ctx, audit.Entry{Action: "team.created"}); err != nil {
			t.Fatal(err)
		}
		r, err := log.Verify(ctx)
		if err != nil || r.Events != 2 || r.LastID != 2 {
			t.Fatalf("a rolled-back append left a trace: %+v %v", r, err)
		}
		if err := log.Append(ctx, audit.Entry{}); err == nil {
			t.Error("an event without an action must be refused")
		}
	})
}

func TestExportWritesJSONLines(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := newClock()
		log := audit.New(st, c.now)
		appendN(t, log, 6)
		var buf bytes.Buffer
		p := int64(2)
		n, err := log.Export(ctx, &buf, store.AuditFilter{Actor: "user1", ProjectID: &p})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		// user1 wrote events 2, 4, 6 (ids), in projects 2, 1, 3: one matches both filters.
		if n != 1 || len(lines) != 1 {
			t.Fatalf("export = %d events: %q", n, buf.String())
		}
		var l audit.Line
		if err := json.Unmarshal([]byte(lines[0]), &l); err != nil {
			t.Fatal(err)
		}
		if l.ID != 2 || l.Actor != "user1" || *l.ProjectID != 2 || l.Action != "job.submitted" || len(l.Hash) != 64 || len(l.PrevHash) != 64 {
			t.Errorf("line = %+v", l)
		}
		var detail struct{ GPUs int }
		if err := json.Unmarshal(l.Detail, &detail); err != nil || detail.GPUs != 1 {
			t.Errorf("detail exported as %s, want the JSON object", l.Detail)
		}
		buf.Reset()
		since := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		if n, err := log.Export(ctx, &buf, store.AuditFilter{Since: since, Until: since.Add(time.Hour)}); err != nil || n != 6 {
			t.Fatalf("export by time = %d, %v; want all 6", n, err)
		}
		if n, _ := log.Export(ctx, &buf, store.AuditFilter{Until: since}); n != 0 {
			t.Errorf("export before the first event = %d, want 0", n)
		}
	})
}

func TestFilterNamesTheWrongField(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	ctx := context.Background()
	team := &models.Team{Name: "vision"}
	if err := st.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	p := &models.Project{TeamID: team.ID, Name: "detect"}
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	log := audit.New(st, time.Now)
	f, err := log.Filter(ctx, audit.Query{Actor: " ada ", Project: "detect", Since: "2026-03-01", Until: "2026-03-02"})
	if err != nil || f.Actor != "ada" || *f.ProjectID != p.ID || !f.Since.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || !f.Until.Equal(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("filter = %+v, %v", f, err)
	}
	for _, tc := range []struct {
		q     audit.Query
		field string
	}{
		{audit.Query{Project: "nope"}, "project"},
		{audit.Query{Since: "last week"}, "since"},
		{audit.Query{Until: "2026-13-01"}, "until"},
		{audit.Query{Since: "2026-03-05T00:00:00Z", Until: "2026-03-04"}, "until"},
	} {
		_, err := log.Filter(ctx, tc.q)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("filter %+v: %v, want an error naming %s", tc.q, err, tc.field)
		}
	}
}

// Two processes on one SQLite file (gantry serve and a gantry admin command, say) append
// to the chain at once: every append lands, none is refused as "database is locked".
func TestAppendsFromTwoProcessesOnSQLite(t *testing.T) {
	t.Parallel()
	cfg := store.Config{DataDir: t.TempDir()}
	var logs []*audit.Log
	for range 2 {
		// Each store has its own connection: as far as SQLite knows, two processes.
		logs = append(logs, audit.New(storetest.Open(t, cfg), time.Now))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, log := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				errs <- log.Append(context.Background(), audit.Entry{Action: "job.submitted", ObjectID: fmt.Sprint(i)})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if r, err := logs[0].Verify(context.Background()); err != nil || r.Events != 200 {
		t.Fatalf("after appends from two processes: %+v %v", r, err)
	}
}
