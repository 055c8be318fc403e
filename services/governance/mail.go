package governance

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Mailer e-mails one address; SMTPSender does.
type Mailer interface {
	SendTo(ctx context.Context, address string, m Message) error
}

// Mail is an e-mail to a person about a page of the portal.
type Mail struct {
	To      string // the address
	Subject string
	Body    string // plain text
	Link    string // the portal path it is about, e.g. /feedback/12; the e-mail ends with it
	// Topic, when set, is what the mail is about (models.MailTopicFeedback); a person
	// who turned off the e-mails of a topic (UserID, the recipient) is sent none, even
	// one queued before they did.
	Topic  string
	UserID int64
	// OptOut, when set, is the portal path where the person turns off e-mails like this
	// one (their account page): the e-mail says so, above its link.
	OptOut string
}

// QueueMail queues an e-mail in tx, the transaction of the change that calls for it, for
// Deliver to send from now on with the alerts' retries and back-off: the change never
// waits on the mail server, and a mail server that is down loses nothing. Without a
// Mailer, to an address that is no e-mail address, or of a topic the recipient turned
// off, it queues nothing; one of a topic they turn off before it is sent is withdrawn.
func (s *Service) QueueMail(ctx context.Context, tx *store.Store, now time.Time, m Mail) error {
	if s.mailer == nil {
		return nil
	}
	if m.Topic != "" {
		off, err := tx.MailOptedOut(ctx, m.UserID, m.Topic)
		if err != nil || off {
			return err
		}
	}
	if _, err := mail.ParseAddress(m.To); err != nil {
		s.log.Warn("e-mail not queued: the recipient's address is not an e-mail address", "about", m.Link)
		return nil
	}
	row := &models.OutboxMail{ToAddress: m.To, Subject: m.Subject, Body: m.Body, Link: m.Link, OptOut: m.OptOut,
		Delivery: models.Delivery{State: models.DeliveryPending, NextAttemptAt: now.UTC()}}
	if m.Topic != "" {
		row.Topic, row.UserID = m.Topic, &m.UserID
	}
	if err := tx.CreateOutboxMail(ctx, row); err != nil {
		return fmt.Errorf("queue e-mail about %s: %w", m.Link, err)
	}
	return nil
}

// deliverMails sends the queued e-mails due at now, as deliverAlerts sends notifications.
func (s *Service) deliverMails(ctx context.Context, now time.Time, rep *DeliveryReport) error {
	due, err := s.store.DueOutboxMails(ctx, now, 100)
	if err != nil {
		return err
	}
	for i := range due {
		m := &due[i]
		if m.Topic != "" && m.UserID != nil {
			// The recipient may have turned the topic off since it was queued.
			off, err := s.store.MailOptedOut(ctx, *m.UserID, m.Topic)
			if err != nil {
				return err
			}
			if off {
				m.State, m.LastError = models.DeliveryWithdrawn, "not sent: the recipient turned off e-mails about "+m.Topic+" after it was queued"
				rep.Withdrawn++
				s.log.Info("e-mail withdrawn: its recipient turned its topic off", "mail", m.ID, "about", m.Link, "topic", m.Topic)
				if err := s.store.UpdateOutboxMail(ctx, m); err != nil {
					return err
				}
				continue
			}
		}
		err := s.sendMail(ctx, m)
		switch s.tried(now, &m.Delivery, err) {
		case models.DeliverySent:
			rep.Sent++
		case models.DeliveryFailed:
			rep.Failed = append(rep.Failed, fmt.Sprintf("e-mail #%d about %s: gave up after %d attempts: %s", m.ID, m.Link, m.Attempts, m.LastError))
			s.log.Error("e-mail failed for good", "mail", m.ID, "about", m.Link, "attempts", m.Attempts, "err", err)
		default:
			rep.Retrying++
			s.log.Warn("e-mail failed; will retry", "mail", m.ID, "about", m.Link, "attempts", m.Attempts, "next", m.NextAttemptAt, "err", err)
		}
		if err := s.store.UpdateOutboxMail(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// portalLink is path as a link into the portal: absolute with --portal-url, else the path.
func (s *Service) portalLink(path string) string {
	if s.cfg.PortalURL == "" {
		return path
	}
	return strings.TrimRight(s.cfg.PortalURL, "/") + path
}

// sendMail sends one queued e-mail, with the link to the portal at its end.
func (s *Service) sendMail(ctx context.Context, m *models.OutboxMail) error {
	if s.mailer == nil {
		return fmt.Errorf("no mail server is configured")
	}
	text := strings.TrimRight(m.Body, "\n")
	if m.OptOut != "" {
		text += "\n\nTo stop e-mails like this one: " + s.portalLink(m.OptOut)
	}
	if m.Link != "" {
		text += "\n\n" + s.portalLink(m.Link)
	}
	sendCtx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	defer cancel()
	return s.mailer.SendTo(sendCtx, m.ToAddress, Message{Subject: "[Gantry] " + m.Subject, Text: text + "\n"})
}
