package feedback_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/governance/mailtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

type fixture struct {
	st          *store.Store
	svc         *feedback.Service
	gov         *governance.Service
	mail        *mailtest.Server
	author, fan *models.User
	admin       *models.User
	ctx         context.Context
	now         time.Time
}

// setup gives the feedback board a real governance service that e-mails through a real
// SMTP server on loopback, at mailAddr when given (a server that is down, say), or at
// the fixture's own.
func setup(t *testing.T, st *store.Store, mailAddr string) fixture {
	t.Helper()
	ctx := audit.WithActor(context.Background(), audit.Actor{Name: "ada", Type: models.ActorUser})
	f := fixture{st: st, mail: mailtest.New(t), ctx: ctx, now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if mailAddr == "" {
		mailAddr = f.mail.Addr
	}
	users := map[string]**models.User{"ada": &f.author, "bob": &f.fan, "root": &f.admin}
	for name, u := range users {
		existing, err := st.UserByUsername(ctx, name)
		if err == nil {
			*u = existing
			continue
		}
		*u = &models.User{Username: name}
		switch name {
		case "ada":
			(*u).Email = "Ada Lovelace <ada@example.com>"
		case "root":
			(*u).IsAdmin = true
		}
		if err := st.CreateUser(ctx, *u); err != nil {
			t.Fatal(err)
		}
	}
	now := func() time.Time { return f.now }
	al := audit.New(st, now)
	acc, err := accounting.New(st, al, accounting.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(st, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.gov, err = governance.New(governance.Deps{Store: st, Accounting: acc, Audit: al, Idle: tel,
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Mailer: governance.SMTPSender{Addr: mailAddr, From: "Gantry <gantry@example.com>"}},
		governance.Config{PortalURL: "https://gantry.example", FirstRetry: time.Minute, MaxRetry: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = feedback.New(st, al, f.gov, now)
	return f
}

// answeredPair files an idea by the fixture's author ("Dark mode") and one by cy, a user
// with an e-mail address ("Light mode"), and answers both, which queues an e-mail to
// each author.
func answeredPair(t *testing.T, f fixture, st *store.Store) (mine, theirs *models.FeedbackItem) {
	t.Helper()
	mine, err := f.svc.Submit(f.ctx, f.author.ID, feedback.Input{Category: "idea", Title: "Dark mode"})
	if err != nil {
		t.Fatal(err)
	}
	cy := &models.User{Username: "cy", Email: "cy@example.com"}
	if err := st.CreateUser(f.ctx, cy); err != nil {
		t.Fatal(err)
	}
	if theirs, err = f.svc.Submit(f.ctx, cy.ID, feedback.Input{Category: "idea", Title: "Light mode"}); err != nil {
		t.Fatal(err)
	}
	for _, it := range []*models.FeedbackItem{mine, theirs} {
		if _, err := f.svc.Answer(f.ctx, it.ID, f.admin.ID, models.FeedbackPlanned, "Next release."); err != nil {
			t.Fatal(err)
		}
	}
	return mine, theirs
}

// deliver runs the leader's delivery round at the fixture's time plus d.
func (f fixture) deliver(t *testing.T, d time.Duration) governance.DeliveryReport {
	t.Helper()
	rep, err := f.gov.Deliver(f.ctx, f.now.Add(d))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestFeedbackLoop(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st, "")
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
		if n := len(f.mail.Received()); n != 0 {
			t.Fatalf("%d e-mails sent before the delivery round; the change must only queue them", n)
		}
		if rep := f.deliver(t, 0); rep.Sent != 2 || rep.Retrying+len(rep.Failed) != 0 {
			t.Fatalf("delivery = %+v, want the reply's and the answer's e-mails sent", rep)
		}
		mails := f.mail.Received()
		if len(mails) != 2 {
			t.Fatalf("mail server got %d e-mails, want 2", len(mails))
		}
		link := fmt.Sprintf("https://gantry.example/feedback/%d", it.ID)
		for i, want := range [][2]string{
			{"New reply to your feedback \"Need more A100s on Mondays\"", "Same for us"},
			{"Your feedback \"Need more A100s on Mondays\" is now planned", "Two more A100 nodes arrive in January."},
		} {
			m := mails[i]
			if m.From != "gantry@example.com" || len(m.To) != 1 || m.To[0] != "ada@example.com" {
				t.Errorf("e-mail %d from %s to %v", i, m.From, m.To)
			}
			for _, part := range []string{"To: \"Ada Lovelace\" <ada@example.com>\r\n", "Subject: [Gantry] " + want[0] + "\r\n", "\r\n\r\n" + want[1] + "\r\n\r\nTo stop e-mails like this one: https://gantry.example/account\r\n\r\n" + link + "\r\n"} {
				if !strings.Contains(m.Data, part) {
					t.Errorf("e-mail %d lacks %q:\n%s", i, part, m.Data)
				}
			}
		}
		if rep := f.deliver(t, time.Hour); rep.Sent != 0 || len(f.mail.Received()) != 2 {
			t.Errorf("a later round sent again: %+v", rep)
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
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	f := setup(t, st, "")
	cases := []struct {
		field string
		in    feedback.Input
	}{
		{"category", feedback.Input{Category: "rant", Title: "hello there"}},
		{"title", feedback.Input{Category: "bug", Title: "x"}},
		{"title", feedback.Input{Category: "bug", Title: "bad \xff utf8"}},
		{"body", feedback.Input{Category: "bug", Title: "long body", Body: strings.Repeat("a", 5001)}},
		{"page", feedback.Input{Category: "bug", Title: "offsite", Page: "https://evil.example"}},
		{"page", feedback.Input{Category: "bug", Title: "offsite", Page: "//evil.example/jobs"}},
		{"page", feedback.Input{Category: "bug", Title: "offsite", Page: "/\\evil.example/jobs"}},
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
	if _, err := f.svc.Answer(f.ctx, 12345, f.admin.ID, models.FeedbackDone, "Done."); !errors.As(err, &fe) || fe.Field != "item" {
		t.Errorf("answer to a missing item: %v", err)
	}
	items, _ := f.svc.Board(f.ctx, store.FeedbackFilter{})
	if len(items) != 0 {
		t.Fatalf("bad input stored %d items", len(items))
	}
	if rep := f.deliver(t, 0); rep.Sent+rep.Retrying+len(rep.Failed) != 0 {
		t.Errorf("bad input queued e-mail: %+v", rep)
	}
}

func TestExportCSV(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	f := setup(t, st, "")
	it, err := f.svc.Submit(f.ctx, f.author.ID, feedback.Input{Category: "idea", Title: "=HYPERLINK(\"x\")", Body: "a, \"quoted\"\nline"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Answer(f.ctx, it.ID, f.admin.ID, models.FeedbackDeclined, "No."); err != nil {
		t.Fatal(err)
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

// An answer given while the mail server is down is kept in the outbox, retried with
// back-off, and survives a restart of the server: the next server e-mails it once the
// mail server is back, and the in-portal notification never waited on it.
func TestAnswerMailSurvivesMailServerDownAndRestart(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			cfg := b.Config(t)
			first := storetest.Open(t, cfg)
			f := setup(t, first, closedPort(t))
			it, err := f.svc.Submit(f.ctx, f.author.ID, feedback.Input{Category: "capacity", Title: "More H100s", Page: "/jobs"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.Answer(f.ctx, it.ID, f.admin.ID, models.FeedbackInProgress, "Ordered."); err != nil {
				t.Fatalf("the answer must not wait on the mail server: %v", err)
			}
			if notes, _ := first.NotificationsOfUser(f.ctx, f.author.ID, 5); len(notes) != 1 {
				t.Fatalf("in-portal notifications = %+v, want the answer's", notes)
			}
			rep := f.deliver(t, 0)
			if rep.Retrying != 1 || rep.Sent != 0 {
				t.Fatalf("delivery with the mail server down = %+v, want one retrying", rep)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			// The server restarts: a new store and governance service, the mail server up.
			again := setup(t, storetest.Open(t, cfg), "")
			if rep := again.deliver(t, 59*time.Second); rep.Sent != 0 || len(again.mail.Received()) != 0 {
				t.Fatalf("sent before the back-off ended: %+v", rep)
			}
			if rep := again.deliver(t, time.Minute); rep.Sent != 1 {
				t.Fatalf("delivery after the restart = %+v, want the queued e-mail sent", rep)
			}
			mails := again.mail.Received()
			if len(mails) != 1 || mails[0].To[0] != "ada@example.com" || !strings.Contains(mails[0].Data, "Subject: [Gantry] Your feedback \"More H100s\" is now in-progress\r\n") ||
				!strings.Contains(mails[0].Data, "\r\n\r\nOrdered.\r\n") {
				t.Fatalf("mail server got %+v", mails)
			}
			rows, err := again.st.OutboxMailsAbout(again.ctx, fmt.Sprintf("/feedback/%d", it.ID))
			if err != nil || len(rows) != 1 || rows[0].State != models.DeliverySent || rows[0].Attempts != 2 || rows[0].LastError != "" {
				t.Fatalf("outbox = %+v, %v; want one e-mail sent at the second attempt", rows, err)
			}
		})
	}
}

// closedPort returns a loopback address that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// An author who turns off the e-mails about their feedback still gets the notifications
// in the portal, but no e-mail about answers, status changes or replies; turned back on,
// the e-mails come again. Each change, and only a change, is audited as the person's.
func TestEmailsOffKeepsNotifications(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st, "")
		ctx := f.ctx
		if on, err := f.svc.EmailsOn(ctx, f.author.ID); !on || err != nil {
			t.Fatalf("a new user's feedback e-mails on = %t, %v; want on", on, err)
		}
		for i := 0; i < 2; i++ {
			if err := f.svc.SetEmails(ctx, f.author.ID, false); err != nil {
				t.Fatal(err)
			}
		}
		if on, err := f.svc.EmailsOn(ctx, f.author.ID); on || err != nil {
			t.Fatalf("after turning them off, e-mails on = %t, %v", on, err)
		}
		if on, err := f.svc.EmailsOn(ctx, f.fan.ID); !on || err != nil {
			t.Fatalf("another user's e-mails on = %t, %v; want on", on, err)
		}
		it, err := f.svc.Submit(ctx, f.author.ID, feedback.Input{Category: "idea", Title: "Dark mode"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Comment(ctx, it.ID, f.fan.ID, "Yes please"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Answer(ctx, it.ID, f.admin.ID, models.FeedbackPlanned, "Next release."); err != nil {
			t.Fatal(err)
		}
		if notes, err := st.NotificationsOfUser(ctx, f.author.ID, 10); err != nil || len(notes) != 2 {
			t.Fatalf("notifications = %d, %v; want the reply's and the answer's", len(notes), err)
		}
		if rep := f.deliver(t, 0); rep.Sent+rep.Retrying+len(rep.Failed) != 0 || len(f.mail.Received()) != 0 {
			t.Fatalf("with e-mails off, delivery = %+v and %d e-mails", rep, len(f.mail.Received()))
		}

		if err := f.svc.SetEmails(ctx, f.author.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Answer(ctx, it.ID, f.admin.ID, models.FeedbackDone, "Shipped."); err != nil {
			t.Fatal(err)
		}
		if rep := f.deliver(t, time.Minute); rep.Sent != 1 {
			t.Fatalf("with e-mails on again, delivery = %+v, want the answer's e-mail", rep)
		}
		if m := f.mail.Received(); len(m) != 1 || !strings.Contains(m[0].Data, "is now done") {
			t.Fatalf("mail server got %+v, want the answer 'done'", m)
		}

		page, err := audit.New(st, time.Now).Events(ctx, store.AuditFilter{}, 0, 20)
		if err != nil {
			t.Fatal(err)
		}
		var toggles []string
		for i := len(page.Events) - 1; i >= 0; i-- {
			if e := page.Events[i]; strings.HasPrefix(e.Action, "feedback.emails_") {
				toggles = append(toggles, e.Action+":"+e.ObjectID+":"+e.Actor)
			}
		}
		if want := "feedback.emails_off:ada:ada feedback.emails_on:ada:ada"; strings.Join(toggles, " ") != want {
			t.Errorf("audited %v, want %s (turning off twice is one event)", toggles, want)
		}
		if err := f.svc.SetEmails(ctx, 999999, false); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("setting e-mails of no user = %v, want not found", err)
		}
	})
}

// An author who turns the e-mails off after an answer's e-mail was queued, and before it
// went (the mail server was down, or the delivery round had not come), is not sent it,
// nor its retries; the e-mails queued to others go; turned on again, the withdrawn one
// stays unsent and the next answer's goes.
func TestEmailsOffWithdrawsQueuedMail(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st, "")
		ctx := f.ctx
		mine, _ := answeredPair(t, f, st)
		if err := f.svc.SetEmails(ctx, f.author.ID, false); err != nil {
			t.Fatal(err)
		}
		rep := f.deliver(t, 0)
		if rep.Sent != 1 || rep.Withdrawn != 1 || rep.Retrying+len(rep.Failed) != 0 {
			t.Fatalf("delivery after the author turned e-mails off = %+v; want the other author's sent and theirs withdrawn", rep)
		}
		if m := f.mail.Received(); len(m) != 1 || !strings.Contains(m[0].Data, "Light mode") {
			t.Fatalf("mail server got %+v; want only the e-mail about Light mode", m)
		}
		rows, err := st.OutboxMailsAbout(ctx, fmt.Sprintf("/feedback/%d", mine.ID))
		if err != nil || len(rows) != 1 || rows[0].State != models.DeliveryWithdrawn || !strings.Contains(rows[0].LastError, "turned off e-mails about feedback") {
			t.Fatalf("the author's e-mail = %+v, %v; want it withdrawn, saying why", rows, err)
		}

		if err := f.svc.SetEmails(ctx, f.author.ID, true); err != nil {
			t.Fatal(err)
		}
		if rep := f.deliver(t, time.Hour); rep.Sent+rep.Withdrawn+rep.Retrying+len(rep.Failed) != 0 {
			t.Fatalf("after turning them on again, the withdrawn e-mail was tried: %+v", rep)
		}
		if _, err := f.svc.Answer(ctx, mine.ID, f.admin.ID, models.FeedbackDone, "Shipped."); err != nil {
			t.Fatal(err)
		}
		if rep := f.deliver(t, 2*time.Hour); rep.Sent != 1 {
			t.Fatalf("the next answer's e-mail = %+v, want sent", rep)
		}
		if m := f.mail.Received(); len(m) != 2 || !strings.Contains(m[1].Data, "is now done") {
			t.Fatalf("mail server got %d e-mails, want the other author's and the answer 'done'", len(m))
		}
	})
}
