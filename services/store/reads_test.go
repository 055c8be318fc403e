package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The reads of every request (sign-in, the jobs page's names and rows) skip gorm, and
// on PostgreSQL go through pgx on a connection of the pool; inside a transaction they
// still read within it, and see its writes before they are committed.
func TestRequestReadsJoinTheTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		rollback := errors.New("roll back")
		err := s.InTx(ctx, func(tx *store.Store) error {
			if err := tx.CreateProject(ctx, &models.Project{TeamID: p.TeamID, Name: "uncommitted"}); err != nil {
				return err
			}
			if names, err := tx.ProjectNames(ctx); err != nil || !slices.Equal(names, []string{"detect", "uncommitted"}) {
				t.Errorf("project names in the transaction = %v, %v; want detect and uncommitted", names, err)
			}
			j := &models.Job{Name: "inside", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := tx.CreateJob(ctx, j, "test"); err != nil {
				return err
			}
			jobs, err := tx.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id", "name"}, Limit: 5})
			if err != nil || len(jobs) != 1 || jobs[0].Name != "inside" || jobs[0].ProjectName != "detect" || jobs[0].Username != "ada" {
				t.Errorf("jobs listed in the transaction = %+v, %v; want the job inside", jobs, err)
			}
			now := time.Now().UTC()
			if err := tx.CreateSession(ctx, &models.Session{ID: "in-tx", UserID: u.ID, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
			if sess, in, err := tx.SessionSignIn(ctx, "in-tx"); err != nil || sess.UserID != u.ID || in.User.Username != "ada" {
				t.Errorf("sign-in in the transaction = %+v, %+v, %v", sess, in, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if names, err := s.ProjectNames(ctx); err != nil || !slices.Equal(names, []string{"detect"}) {
			t.Errorf("project names after the rollback = %v, %v; want detect", names, err)
		}
		if jobs, err := s.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id"}}); err != nil || len(jobs) != 0 {
			t.Errorf("jobs after the rollback = %+v, %v; want none", jobs, err)
		}
		if _, _, err := s.SessionSignIn(ctx, "in-tx"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("sign-in after the rollback: %v, want ErrNotFound", err)
		}
	})
}

// A request that has ended reads nothing more: its reads fail with its context's error.
func TestRequestReadsOfAnEndedRequestFail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		u, p := fixture(t, s)
		if err := s.CreateJob(context.Background(), &models.Job{Name: "a", ProjectID: p.ID, UserID: u.ID, PriorityClass: "research"}, "test"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		f := store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id", "name"}, Limit: 5}
		if jobs, names, err := s.BriefJobsAndProjectNames(ctx, f); err != nil || len(jobs) != 1 || len(names) != 1 {
			t.Fatalf("before the end: %v, %v, %v", jobs, names, err)
		}
		cancel()
		if _, _, err := s.BriefJobsAndProjectNames(ctx, f); !errors.Is(err, context.Canceled) {
			t.Errorf("a read after the request ended: %v, want context.Canceled", err)
		}
	})
}

// The jobs page of a caller who reads every project needs its rows and every
// project's name: on PostgreSQL they come in one round trip, as they would in two
// separate reads.
func TestJobsPageReadsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := storetest.Backends()[1].Config(t)
	s, trips, err := store.OpenCounting(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	u, p := fixture(t, s)
	for _, name := range []string{"b-second", "a-first"} {
		j := &models.Job{Name: name, ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		if err := s.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateProject(ctx, &models.Project{TeamID: p.TeamID, Name: "asr"}); err != nil {
		t.Fatal(err)
	}
	f := store.JobFilter{Sort: store.JobsByName, Ascending: true, Columns: []string{"id", "name", "project_id"}, Limit: 5}
	wantJobs, err := s.BriefJobs(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	// The first time, each statement is prepared on its connection first.
	for i := range 2 {
		before := trips.Count()
		jobs, names, err := s.BriefJobsAndProjectNames(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(jobs, wantJobs) || len(jobs) != 2 || jobs[0].Name != "a-first" || jobs[1].ProjectName != "detect" {
			t.Errorf("jobs = %+v, want %+v", jobs, wantJobs)
		}
		if !slices.Equal(names, []string{"asr", "detect"}) {
			t.Errorf("names = %v, want asr, detect", names)
		}
		// A text repeated in one round trip is read into one string.
		if len(jobs) == 2 && len(names) == 2 && (unsafe.StringData(jobs[0].ProjectName) != unsafe.StringData(jobs[1].ProjectName) ||
			unsafe.StringData(jobs[0].ProjectName) != unsafe.StringData(names[1])) {
			t.Error("the project's name was read into several strings")
		}
		if n := trips.Count() - before; i == 1 && n != 1 {
			t.Errorf("the page's rows and names took %d round trips, want 1", n)
		}
	}
	if _, _, err := s.BriefJobsAndProjectNames(ctx, store.JobFilter{}); err == nil {
		t.Error("a page that names no columns was read")
	}
}

// On PostgreSQL the request reads decode pgx's wire values themselves: each value
// reads as database/sql and pgx read it, NULLs included, and a column or field they
// do not decode goes to pgx.
func TestRequestReadsScanAsPgx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := storetest.Backends()[1].Config(t)
	s := storetest.Open(t, cfg)
	type row struct {
		text, empty, numeric string
		nullText, someText   sql.NullString
		big, negative        int64
		integer, small       int
		yes, no              bool
		at                   time.Time
		noTime, someTime     *time.Time
		noInt, someInt       *int
		noBig, someBig       *int64
	}
	fields := func(r *row) []any {
		return []any{&r.text, &r.empty, &r.numeric, &r.nullText, &r.someText, &r.big, &r.negative, &r.integer, &r.small,
			&r.yes, &r.no, &r.at, &r.noTime, &r.someTime, &r.noInt, &r.someInt, &r.noBig, &r.someBig}
	}
	const q = `SELECT 'détecté'::text, ''::text, 1.50::numeric, NULL::text, 'x'::varchar, 9007199254740993::bigint,
		-42::bigint, 2147483647::integer, (-7)::smallint, true, false, '2026-03-02 09:00:00.123456+00'::timestamptz,
		NULL::timestamptz, '1999-12-31 23:59:59.999999+00'::timestamptz, NULL::integer, 3::integer, NULL::bigint, 5::bigint`
	var got, want row
	if err := s.ReadRow(ctx, q, fields(&got)...); err != nil {
		t.Fatal(err)
	}
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, q).Scan(fields(&want)...); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read\n %+v\nwant (database/sql)\n %+v", got, want)
	}
	if got.text != "détecté" || got.numeric != "1.50" || got.nullText.Valid || got.someText.String != "x" || got.small != -7 ||
		got.someTime == nil || !got.someTime.Equal(time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)) || got.noInt != nil || *got.someBig != 5 {
		t.Errorf("read %+v", got)
	}
	var at time.Time
	var s2 string
	for _, c := range []struct {
		query string
		dest  any
	}{
		{"SELECT 'infinity'::timestamptz", &at},
		{"SELECT NULL::text", &s2},
	} {
		if err := s.ReadRow(ctx, c.query, c.dest); err == nil {
			t.Errorf("%s read into %T without an error", c.query, c.dest)
		}
	}
}

// A request's read, or a transaction, that finds its pooled connections cut by PostgreSQL
// (a restart, an administrator ending the sessions) runs again on a fresh one instead of
// failing, however many dead connections the pool holds.
func TestReadsAndTransactionsRideOutCutConnections(t *testing.T) {
	t.Parallel()
	cfg := storetest.Backends()[1].Config(t)
	s := storetest.Open(t, cfg)
	ctx := context.Background()
	u, p := fixture(t, s)
	j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
	if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
		t.Fatal(err)
	}
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cutPool := func() {
		t.Helper()
		// Four connections in the pool, each handed out twice within the last second:
		// pgx's own rule pings a connection handed out for the first time, or again
		// after a second or more; these are left to the look for the server's goodbye.
		for range 2 {
			held := make(chan struct{})
			var busy sync.WaitGroup
			for range 4 {
				busy.Add(1)
				go func() {
					defer busy.Done()
					if err := s.InTx(ctx, func(tx *store.Store) error {
						_, err := tx.JobByID(ctx, j.ID)
						<-held
						return err
					}); err != nil {
						t.Error(err)
					}
				}()
			}
			time.Sleep(100 * time.Millisecond)
			close(held)
			busy.Wait()
		}
		var cut int
		if err := db.QueryRow("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&cut); err != nil || cut < 4 {
			t.Fatalf("cut %d connections: %v; want the pool's", cut, err)
		}
		time.Sleep(100 * time.Millisecond) // the cut backends exit
	}
	cutPool()
	for i := range 3 {
		if _, err := s.JobActivity(ctx, j.ID); err != nil {
			t.Fatalf("read %d after the cut: %v", i+1, err)
		}
	}
	cutPool()
	second := &models.Job{Name: "eval", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
	if err := s.CreateJob(ctx, second, "user:ada"); err != nil {
		t.Fatalf("a transaction after the cut: %v", err)
	}
	if got, err := s.JobByID(ctx, second.ID); err != nil || got.Name != "eval" {
		t.Fatalf("the job written after the cut: %+v, %v", got, err)
	}
	// A single statement outside a transaction is not run again when its connection
	// dies under it (it may have committed): the pool must not hand out a connection
	// that PostgreSQL has already ended.
	sess := &models.Session{ID: "cut-pool", UserID: u.ID, ExpiresAt: time.Now().Add(time.Hour), LastSeenAt: time.Now()}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	cutPool()
	seen := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	if err := s.TouchSession(ctx, sess.ID, seen); err != nil {
		t.Fatalf("a single write after the cut: %v", err)
	}
	cutPool()
	if got, err := s.SessionByID(ctx, sess.ID); err != nil || !got.LastSeenAt.Equal(seen) {
		t.Fatalf("a single read after the cut: %+v, %v; want last seen %s", got, err, seen)
	}
}

// A read, or a transaction's BEGIN, whose connection PostgreSQL ends as it is sent
// (after the pool's look found it alive) runs again on another connection: nothing
// of it ran.
func TestReadsAndTransactionsRideOutACutAsTheyAreSent(t *testing.T) {
	t.Parallel()
	cfg := storetest.Backends()[1].Config(t)
	fixed := storetest.Open(t, cfg)
	ctx := context.Background()
	u, p := fixture(t, fixed)
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, cutter, err := store.OpenCutting(ctx, cfg, func(pid uint32) error {
		_, err := db.Exec("SELECT pg_terminate_backend($1)", int64(pid))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
	cutter.Arm()
	if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
		t.Fatalf("a transaction cut as it began: %v", err)
	}
	cutter.Arm()
	if _, err := s.JobActivity(ctx, j.ID); err != nil {
		t.Fatalf("a read cut as it was sent: %v", err)
	}
	if n := cutter.Cuts(); n != 2 {
		t.Fatalf("%d sessions ended under a statement, want 2", n)
	}
	if n := cutter.Loud(); n != 0 {
		t.Errorf("%d live connections looked as if the server had spoken on them", n)
	}
}

// After a write that stalled (a loaded machine), pgx's background read may still wait
// on the connection's socket when the pool hands it out again: the look for the
// server's goodbye must not wait behind it.
func TestConnectionsAreReusedAfterAStalledWrite(t *testing.T) {
	t.Parallel()
	cfg := storetest.Backends()[1].Config(t)
	fixed := storetest.Open(t, cfg)
	ctx := context.Background()
	u, p := fixture(t, fixed)
	s, err := store.OpenStalling(ctx, cfg, 20*time.Millisecond) // pgx reads in the background after 15 ms
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		for i := range 5 {
			j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				done <- fmt.Errorf("write %d: %w", i, err)
				return
			}
			if _, err := s.JobActivity(ctx, j.ID); err != nil {
				done <- fmt.Errorf("read %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a statement after a stalled write waited a minute")
	}
}
