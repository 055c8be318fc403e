package feedback_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// E-mails queued before migration 0030 had no topic, so an author who turned the e-mails
// off after one was queued was still sent it. The migration gives the pending ones about
// a feedback item the topic and the item's author, so such an opt-out withdraws them; one
// already sent, or about no item, is left as it was.
func TestMigrationGivesOldFeedbackMailsTheirTopic(t *testing.T) {
	t.Parallel()
	version := migrationVersion(t, "mail_outbox_old_topic")
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			f := setup(t, st, "")
			ctx := f.ctx
			mine, theirs := answeredPair(t, f, st)
			link := fmt.Sprintf("/feedback/%d", mine.ID)
			sent := f.now
			others := []models.OutboxMail{
				{ToAddress: "ada@example.com", Subject: "Sent before", Link: link, Delivery: models.Delivery{State: models.DeliverySent, NextAttemptAt: f.now, SentAt: &sent}},
				{ToAddress: "ada@example.com", Subject: "About no item", Link: fmt.Sprintf("/feedback/%d", theirs.ID+1000)},
				{ToAddress: "ada@example.com", Subject: "About a job", Link: fmt.Sprintf("/jobs/%d", mine.ID)},
			}
			for i := range others {
				if others[i].State == "" {
					others[i].Delivery = models.Delivery{State: models.DeliveryPending, NextAttemptAt: f.now}
				}
				if err := st.CreateOutboxMail(ctx, &others[i]); err != nil {
					t.Fatal(err)
				}
			}
			// As the rows queued before 0030 are: no topic, no recipient.
			storetest.Exec(t, cfg, "UPDATE mail_outbox SET topic = '', user_id = NULL")
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version))
			if applied, err := st.Migrate(ctx); err != nil || len(applied) != 1 || applied[0] != version {
				t.Fatalf("migrate applied %v, %v; want %d", applied, err, version)
			}
			want := map[string]int64{"Dark mode": f.author.ID, "Light mode": theirs.UserID}
			for _, l := range []string{link, fmt.Sprintf("/feedback/%d", theirs.ID), others[1].Link, others[2].Link} {
				rows, err := st.OutboxMailsAbout(ctx, l)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range rows {
					var to int64
					for title, u := range want {
						if strings.Contains(m.Subject, title) {
							to = u
						}
					}
					switch {
					case to != 0 && (m.Topic != models.MailTopicFeedback || m.UserID == nil || *m.UserID != to):
						t.Errorf("e-mail %q has topic %q to %v, want feedback to user %d", m.Subject, m.Topic, m.UserID, to)
					case to == 0 && (m.Topic != "" || m.UserID != nil):
						t.Errorf("e-mail %q was given topic %q to %v, want it left as it was", m.Subject, m.Topic, m.UserID)
					}
				}
			}

			if err := f.svc.SetEmails(ctx, f.author.ID, false); err != nil {
				t.Fatal(err)
			}
			rep := f.deliver(t, 0)
			if rep.Sent != 3 || rep.Withdrawn != 1 || rep.Retrying+len(rep.Failed) != 0 {
				t.Fatalf("delivery after the author turned e-mails off = %+v; want theirs withdrawn, the other three sent", rep)
			}
			for _, m := range f.mail.Received() {
				if strings.Contains(m.Data, "Dark mode") {
					t.Errorf("the author was sent the e-mail about Dark mode queued before they turned e-mails off")
				}
			}
		})
	}
}
