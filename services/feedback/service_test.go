package feedback_test

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type sent struct{ to, subject, body string }

// mailbox records what would have been e-mailed.
type mailbox struct {
	mu   sync.Mutex
	mail []sent
	fail bool
}

func (m *mailbox) Send(_ context.Context, to, subject, body string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("smtp down")
	}
	m.mail = append(m.mail, sent{to, subject, body})
	return nil
}

type fixture struct {
	st          *store.Store
	svc         *feedback.Service
	box         *mailbox
	author, fan *models.User
	admin       *models.User
	ctx         context.Context
}

func setup(t *testing.T, st *store.Store) fixture {
	t.Helper()
	ctx := audit.WithActor(context.Background(), audit.Actor{Name: "ada", Type: models.ActorUser})
	f := fixture{st: st, box: &mailbox{}, ctx: ctx}
	for _, u := range []**models.User{&f.author, &f.fan, &f.admin} {
		*u = &models.User{}
	}
	f.author.Username, f.author.Email = "ada", "ada@example.com"
	f.fan.Username = "bob"
	f.admin.Username, f.admin.IsAdmin = "root", true
	for _, u := range []*models.User{f.author, f.fan, f.admin} {
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	now := func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }
	f.svc = feedback.New(st, audit.New(st, now), f.box, slog.New(slog.NewTextHandler(io.Discard, nil)), now)
	return f
}

func TestFeedbackLoop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st)
		ctx := f.ctx
		it, err := f.svc.Submit(ctx, f.author.ID, feedback.Input{Category: "capacity", Title: "  Need more A100s on Mondays ", Body: "Queue waits 3 h", Page: "/jobs"})
		if err != nil {
			t.Fatal(err)
		}
		if it.Status != models.FeedbackNew || it.Title != "Need more A100s on Mondays" {
			t.Fatalf("submitted = %+v", it)
		}
		for i := 0; i < 2; i++ { // voting twice counts once
			if err := f.svc.Vote(ctx, it.ID, f.fan.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.svc.Vote(ctx, it.ID, f.author.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Unvote(ctx, it.ID, f.author.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Comment(ctx, it.ID, f.fan.ID, "Same for us"); err != nil {
			t.Fatal(err)
		}
		answered, err := f.svc.Answer(ctx, it.ID, f.admin.ID, models.FeedbackPlanned, "Two more A100 nodes arrive in January.")
		if err != nil {
			t.Fatal(err)
		}
		if answered.Status != models.FeedbackPlanned || answered.AnsweredByID == nil || *answered.AnsweredByID != f.admin.ID {
			t.Fatalf("answered = %+v", answered)
		}
		board, err := f.svc.Board(ctx, store.FeedbackFilter{ByVotes: true})
		if err != nil || len(board) != 1 || board[0].VoteCount != 1 {
			t.Fatalf("board = %+v, %v; want one item with 1 vote", board, err)
		}
		notes, err := st.NotificationsOfUser(ctx, f.author.ID, 10)
		if err != nil || len(notes) != 2 {
			t.Fatalf("author notifications = %+v, %v; want the reply and the answer", notes, err)
		}
		if !strings.Contains(notes[0].Title, "is now planned") || notes[0].Body != "Two more A100 nodes arrive in January." || notes[0].Link == "" {
			t.Errorf("answer notification = %+v", notes[0])
		}
		if len(f.box.mail) != 2 || f.box.mail[1].to != "ada@example.com" || !strings.Contains(f.box.mail[1].subject, "planned") {
			t.Errorf("e-mails = %+v", f.box.mail)
		}
		stats, err := f.svc.Stats(ctx, 5)
		if err != nil || len(stats.Counts) != 1 || stats.Counts[0].N != 1 || len(stats.Unanswered) != 0 {
			t.Fatalf("stats = %+v, %v", stats, err)
		}
		page, err := audit.New(st, time.Now).Events(ctx, store.AuditFilter{}, 0, 20)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for i := len(page.Events) - 1; i >= 0; i-- {
			actions = append(actions, page.Events[i].Action)
		}
		want := "feedback.created feedback.voted feedback.voted feedback.unvoted feedback.commented feedback.answered"
		if strings.Join(actions, " ") != want {
			t.Errorf("audited %v, want %s (a repeated vote is not an event)", actions, want)
		}
	})
}

func TestBadFeedbackChangesNothing(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	f := setup(t, st)
	cases := []struct {
		field string
		in    feedback.Input
	}{
		{"category", feedback.Input{Category: "rant", Title: "hello there"}},
		{"title", feedback.Input{Category: "bug", Title: "x"}},
		{"title", feedback.Input{Category: "bug", Title: "bad \xff utf8"}},
		{"body", feedback.Input{Category: "bug", Title: "long body", Body: strings.Repeat("a", 5001)}},
		{"page", feedback.Input{Category: "bug", Title: "offsite", Page: "https://evil.example"}},
	}
	for _, c := range cases {
		_, err := f.svc.Submit(f.ctx, f.author.ID, c.in)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want a FieldError on %s", c.in, err, c.field)
		}
	}
	missing := int64(999)
	var fe *models.FieldError
	if _, err := f.svc.Submit(f.ctx, f.author.ID, feedback.Input{Category: "bug", Title: "about a job", JobID: &missing}); !errors.As(err, &fe) || fe.Field != "job_id" {
		t.Errorf("unknown job: %v", err)
	}
	if err := f.svc.Vote(f.ctx, 12345, f.fan.ID); !errors.As(err, &fe) || fe.Field != "item" {
		t.Errorf("vote on a missing item: %v", err)
	}
	if _, err := f.svc.Answer(f.ctx, 1, f.admin.ID, "maybe", ""); !errors.As(err, &fe) || fe.Field != "status" {
		t.Errorf("unknown status: %v", err)
	}
	items, _ := f.svc.Board(f.ctx, store.FeedbackFilter{})
	if len(items) != 0 {
		t.Fatalf("bad input stored %d items", len(items))
	}
}

func TestExportCSVAndMailFailure(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	f := setup(t, st)
	f.box.fail = true
	it, err := f.svc.Submit(f.ctx, f.author.ID, feedback.Input{Category: "idea", Title: "=HYPERLINK(\"x\")", Body: "a, \"quoted\"\nline"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Answer(f.ctx, it.ID, f.admin.ID, models.FeedbackDeclined, "No."); err != nil {
		t.Fatalf("a failed e-mail must not fail the answer: %v", err)
	}
	if notes, _ := st.NotificationsOfUser(f.ctx, f.author.ID, 5); len(notes) != 1 {
		t.Fatalf("in-portal notification lost when e-mail failed: %+v", notes)
	}
	var b strings.Builder
	if err := f.svc.ExportCSV(f.ctx, &b, store.FeedbackFilter{}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv = %q, %v", b.String(), err)
	}
	if rows[1][6] != "'=HYPERLINK(\"x\")" || rows[1][7] != "a, \"quoted\"\nline" || rows[1][4] != "declined" {
		t.Errorf("csv row = %q", rows[1])
	}
}
