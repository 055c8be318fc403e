package governance_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// An e-mail queued with a change goes out at the next delivery round, not before, with
// the link to the portal at its end; one the mail server refuses is retried with the
// back-off and given up on after the last attempt; an address that is none is not
// queued; without a mailer nothing is.
func TestQueuedMailIsSentWithBackoff(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{MaxAttempts: 3, FirstRetry: 30 * time.Second, MaxRetry: time.Minute})
		queue := func(gov *governance.Service, to string) {
			t.Helper()
			must(t, s.InTx(e.ctx, func(tx *store.Store) error {
				return gov.QueueMail(e.ctx, tx, tue, governance.Mail{To: to, Subject: `Your feedback "More A100s" is now planned`,
					Body: "Two nodes arrive in January.", Link: "/feedback/7"})
			}))
		}
		for _, to := range []string{"Ada <ada@example.com>", "nobody@refuse.example", "not an address"} {
			queue(e.gov, to)
		}
		if n := len(e.mail.Received()); n != 0 {
			t.Fatalf("queueing sent %d e-mails", n)
		}
		if got := e.deliver(tue); got.Sent != 1 || got.Retrying != 1 {
			t.Fatalf("first round = %+v, want 1 sent and 1 retrying", got)
		}
		mails := e.mail.Received()
		if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0] != "ada@example.com" {
			t.Fatalf("mail server got %+v", mails)
		}
		for _, part := range []string{"Subject: [Gantry] Your feedback \"More A100s\" is now planned\r\n", "To: \"Ada\" <ada@example.com>\r\n",
			"\r\n\r\nTwo nodes arrive in January.\r\n\r\nhttps://gantry.example/feedback/7\r\n"} {
			if !strings.Contains(mails[0].Data, part) {
				t.Errorf("e-mail lacks %q:\n%s", part, mails[0].Data)
			}
		}
		if strings.Contains(mails[0].Data, "X-Gantry-Alert") {
			t.Error("an e-mail about feedback claims to be an alert")
		}
		if got := e.deliver(tue.Add(29 * time.Second)); got.Sent+got.Retrying+len(got.Failed) != 0 {
			t.Errorf("retried before the back-off: %+v", got)
		}
		if got := e.deliver(tue.Add(30 * time.Second)); got.Retrying != 1 {
			t.Errorf("second round = %+v, want the refused one retrying", got)
		}
		got := e.deliver(tue.Add(90 * time.Second))
		if len(got.Failed) != 1 || !strings.Contains(got.Failed[0], "e-mail #") || !strings.Contains(got.Failed[0], "about /feedback/7: gave up after 3 attempts") ||
			!strings.Contains(got.Failed[0], "RCPT TO nobody@refuse.example") {
			t.Fatalf("third round = %+v, want the refused one given up on", got)
		}
		rows, err := s.OutboxMailsAbout(e.ctx, "/feedback/7")
		must(t, err)
		var states []string
		for _, r := range rows {
			states = append(states, r.State+"/"+string(rune('0'+r.Attempts)))
		}
		if strings.Join(states, " ") != models.DeliverySent+"/1 "+models.DeliveryFailed+"/3" {
			t.Errorf("outbox = %v, want sent/1 failed/3 and nothing for the address that is none", states)
		}
		if got := e.deliver(tue.Add(time.Hour)); got.Sent+got.Retrying+len(got.Failed) != 0 || len(e.mail.Received()) != 1 {
			t.Errorf("delivered again after the end: %+v", got)
		}

		bare, err := governance.New(governance.Deps{Store: s, Accounting: e.acc, Audit: e.audit, Idle: e.tel, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, governance.Config{})
		must(t, err)
		queue(bare, "ada@example.com")
		if rows, _ := s.OutboxMailsAbout(e.ctx, "/feedback/7"); len(rows) != 2 {
			t.Errorf("without a mailer an e-mail was queued: %d rows", len(rows))
		}
	})
}

// An e-mail is deleted MailRetention after it was sent or given up on, not before;
// one still being tried is kept.
func TestEndedMailIsDeletedAfterRetention(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{MaxAttempts: 3, FirstRetry: 30 * time.Second, MaxRetry: time.Minute, MailRetention: 24 * time.Hour})
		queue := func(at time.Time, to, link string) {
			t.Helper()
			must(t, s.InTx(e.ctx, func(tx *store.Store) error {
				return e.gov.QueueMail(e.ctx, tx, at, governance.Mail{To: to, Subject: "Planned", Body: "Soon.", Link: link})
			}))
		}
		kept := func(link string) int {
			t.Helper()
			rows, err := s.OutboxMailsAbout(e.ctx, link)
			must(t, err)
			return len(rows)
		}
		queue(tue, "ada@example.com", "/feedback/1")
		queue(tue, "nobody@refuse.example", "/feedback/2")
		for _, at := range []time.Duration{0, 30 * time.Second, 90 * time.Second} {
			e.deliver(tue.Add(at))
		}
		day := tue.Add(24 * time.Hour)
		queue(day, "nobody@refuse.example", "/feedback/3")
		if got := e.deliver(day.Add(-time.Second)); got.Pruned != 0 || kept("/feedback/1") != 1 {
			t.Fatalf("a day less a second after it was sent: %+v, %d kept", got, kept("/feedback/1"))
		}
		if got := e.deliver(day.Add(time.Second)); got.Pruned != 1 || kept("/feedback/1") != 0 || kept("/feedback/2") != 1 {
			t.Fatalf("a day and a second after it was sent: %+v; sent one kept %d, failed one kept %d", got, kept("/feedback/1"), kept("/feedback/2"))
		}
		if got := e.deliver(day.Add(91 * time.Second)); got.Pruned != 1 || kept("/feedback/2") != 0 || kept("/feedback/3") != 1 {
			t.Errorf("a day after the last try: %+v; failed one kept %d, the one being tried kept %d", got, kept("/feedback/2"), kept("/feedback/3"))
		}
	})
}

// A person who turned off the e-mails of a topic is queued none of it; mails of another
// topic, or of none, still go, to them and to others; turned on again, it goes again.
func TestQueueMailHonoursOptOut(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		ada := &models.User{Username: "ada-optout", Email: "ada@example.com"}
		bob := &models.User{Username: "bob-optout", Email: "bob@example.com"}
		must(t, s.CreateUser(e.ctx, ada))
		must(t, s.CreateUser(e.ctx, bob))
		queue := func(u *models.User, topic, link string) int {
			t.Helper()
			must(t, s.InTx(e.ctx, func(tx *store.Store) error {
				return e.gov.QueueMail(e.ctx, tx, tue, governance.Mail{To: u.Email, Subject: "Planned", Body: "Soon.", Link: link, Topic: topic, UserID: u.ID})
			}))
			rows, err := s.OutboxMailsAbout(e.ctx, link)
			must(t, err)
			return len(rows)
		}
		changed, err := s.SetMailOptOut(e.ctx, ada.ID, models.MailTopicFeedback, true)
		must(t, err)
		if again, err := s.SetMailOptOut(e.ctx, ada.ID, models.MailTopicFeedback, true); !changed || again || err != nil {
			t.Fatalf("turning off changed %t, turning off again changed %t (%v), want true then false", changed, again, err)
		}
		if n := queue(ada, models.MailTopicFeedback, "/feedback/1"); n != 0 {
			t.Errorf("ada turned feedback e-mails off, yet %d was queued", n)
		}
		if n := queue(bob, models.MailTopicFeedback, "/feedback/2"); n != 1 {
			t.Errorf("bob's feedback e-mail: %d queued, want 1", n)
		}
		if n := queue(ada, "", "/feedback/3"); n != 1 {
			t.Errorf("ada's e-mail of no topic: %d queued, want 1", n)
		}
		if n := queue(ada, "other", "/feedback/4"); n != 1 {
			t.Errorf("ada's e-mail of another topic: %d queued, want 1", n)
		}
		if changed, err := s.SetMailOptOut(e.ctx, ada.ID, models.MailTopicFeedback, false); !changed || err != nil {
			t.Fatalf("turning on again changed %t, %v", changed, err)
		}
		if n := queue(ada, models.MailTopicFeedback, "/feedback/5"); n != 1 {
			t.Errorf("ada turned feedback e-mails on again, yet %d was queued", n)
		}
	})
}

// The opt-out is checked again when an e-mail is sent: one of a topic its recipient
// turned off after it was queued is withdrawn (not sent, not retried, and kept saying
// why until pruned); one of no topic to them, and one of the topic to another, go.
func TestDeliveryWithdrawsMailOptedOutAfterQueueing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{MailRetention: time.Hour})
		ada := &models.User{Username: "ada-late", Email: "ada@example.com"}
		bob := &models.User{Username: "bob-late", Email: "bob@example.com"}
		must(t, s.CreateUser(e.ctx, ada))
		must(t, s.CreateUser(e.ctx, bob))
		queue := func(u *models.User, topic, link string) {
			t.Helper()
			must(t, s.InTx(e.ctx, func(tx *store.Store) error {
				return e.gov.QueueMail(e.ctx, tx, tue, governance.Mail{To: u.Email, Subject: "Planned", Body: "Soon.", Link: link, Topic: topic, UserID: u.ID})
			}))
		}
		queue(ada, models.MailTopicFeedback, "/feedback/1")
		queue(ada, "", "/feedback/2")
		queue(bob, models.MailTopicFeedback, "/feedback/3")
		_, err := s.SetMailOptOut(e.ctx, ada.ID, models.MailTopicFeedback, true)
		must(t, err)
		if got := e.deliver(tue); got.Sent != 2 || got.Withdrawn != 1 || got.Retrying+len(got.Failed) != 0 {
			t.Fatalf("delivery = %+v; want ada's feedback e-mail withdrawn, the other two sent", got)
		}
		var to []string
		for _, m := range e.mail.Received() {
			to = append(to, strings.Join(m.To, ","))
		}
		if strings.Join(to, " ") != "ada@example.com bob@example.com" {
			t.Errorf("the mail server got e-mails to %v; want ada's of no topic and bob's", to)
		}
		rows, err := s.OutboxMailsAbout(e.ctx, "/feedback/1")
		must(t, err)
		if len(rows) != 1 || rows[0].State != models.DeliveryWithdrawn || rows[0].Topic != models.MailTopicFeedback || rows[0].UserID == nil || *rows[0].UserID != ada.ID ||
			!strings.Contains(rows[0].LastError, "turned off e-mails about feedback after it was queued") {
			t.Fatalf("ada's feedback e-mail = %+v; want it withdrawn, of the topic and to ada, saying why", rows)
		}
		if got := e.deliver(tue.Add(time.Minute)); got.Sent+got.Withdrawn+got.Retrying+len(got.Failed) != 0 {
			t.Errorf("the next round did something: %+v", got)
		}
		if got := e.deliver(tue.Add(2 * time.Hour)); got.Pruned != 3 {
			t.Errorf("after the retention, pruned %d; want the withdrawn one with the two sent", got.Pruned)
		}
	})
}
