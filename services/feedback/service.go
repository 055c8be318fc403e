package feedback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
)

// Categories a feedback item may have.
var Categories = []string{"bug", "idea", "question", "capacity", "image-request"}

// Statuses an admin may set.
var Statuses = []string{models.FeedbackNew, models.FeedbackPlanned, models.FeedbackInProgress, models.FeedbackDone, models.FeedbackDeclined}

// Mailer queues an e-mail in the transaction of the change that calls for it, to be sent
// later with retries and back-off, so that a request never waits on the mail server;
// governance.Service does (its delivery loop sends), and queues nothing when no mail
// server is configured.
type Mailer interface {
	QueueMail(ctx context.Context, tx *store.Store, now time.Time, m governance.Mail) error
}

// Service runs the feedback board.
type Service struct {
	store  *store.Store
	audit  *audit.Log
	mailer Mailer
	now    func() time.Time
}

// New returns the feedback service; mailer may be nil: no e-mail then.
func New(st *store.Store, auditLog *audit.Log, mailer Mailer, now func() time.Time) *Service {
	return &Service{store: st, audit: auditLog, mailer: mailer, now: now}
}

// Input is what a user files.
type Input struct {
	Category string
	Title    string
	Body     string
	Page     string // the page the user was on
	JobID    *int64 // the job it concerns, if any
}

// Validate checks every field and returns the first problem as a models.FieldError.
func (in Input) Validate() error {
	if !slices.Contains(Categories, in.Category) {
		return models.Invalid("category", "must be one of %s", strings.Join(Categories, ", "))
	}
	if err := text("title", in.Title, 3, 200); err != nil {
		return err
	}
	if err := text("body", in.Body, 0, 5000); err != nil {
		return err
	}
	if len(in.Page) > 500 || (in.Page != "" && (!strings.HasPrefix(in.Page, "/") || strings.HasPrefix(in.Page, "//") || strings.HasPrefix(in.Page, "/\\"))) {
		return models.Invalid("page", "must be a path of this portal, such as /jobs/12")
	}
	return nil
}

func text(field, s string, min, max int) error {
	if !utf8.ValidString(s) {
		return models.Invalid(field, "must be valid UTF-8 text")
	}
	n := utf8.RuneCountInString(strings.TrimSpace(s))
	if n < min || n > max {
		return models.Invalid(field, "must be %d to %d characters (got %d)", min, max, n)
	}
	return nil
}

// PagePath is page without its query or fragment: a query can hold filters, names, or
// a token pasted into a link, which feedback has no need of; the path says the page.
func PagePath(page string) string {
	if i := strings.IndexAny(page, "?#"); i >= 0 {
		return page[:i]
	}
	return page
}

// Submit files a new item by user. Its page is kept by its path alone (PagePath), whatever
// the form sent.
func (s *Service) Submit(ctx context.Context, userID int64, in Input) (*models.FeedbackItem, error) {
	in.Page = PagePath(in.Page)
	if err := in.Validate(); err != nil {
		return nil, err
	}
	it := &models.FeedbackItem{
		UserID: userID, Category: in.Category, Title: strings.TrimSpace(in.Title), Body: strings.TrimSpace(in.Body),
		Page: in.Page, JobID: in.JobID, Status: models.FeedbackNew,
	}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateFeedbackItem(ctx, it); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "feedback.created", ObjectType: "feedback", ObjectID: fmt.Sprint(it.ID), Detail: map[string]string{"category": it.Category, "title": it.Title}})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("job_id", "no such job")
	}
	if err != nil {
		return nil, fmt.Errorf("submit feedback: %w", err)
	}
	return it, nil
}

// Vote adds the user's vote to an item; voting twice is a no-op.
func (s *Service) Vote(ctx context.Context, itemID, userID int64) error {
	return s.vote(ctx, itemID, userID, true)
}

// Unvote withdraws the user's vote; withdrawing none is a no-op.
func (s *Service) Unvote(ctx context.Context, itemID, userID int64) error {
	return s.vote(ctx, itemID, userID, false)
}

func (s *Service) vote(ctx context.Context, itemID, userID int64, add bool) error {
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.FeedbackItemByID(ctx, itemID); err != nil {
			return err
		}
		has, err := tx.HasFeedbackVote(ctx, itemID, userID)
		if err != nil || has == add {
			return err
		}
		action := "feedback.voted"
		if add {
			err = tx.AddFeedbackVote(ctx, itemID, userID)
		} else {
			action = "feedback.unvoted"
			err = tx.RemoveFeedbackVote(ctx, itemID, userID)
		}
		if err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "feedback", ObjectID: fmt.Sprint(itemID)})
	})
	return notFoundAsField(err, itemID)
}

// Comment adds a reply by user; the author is notified when someone else replies.
func (s *Service) Comment(ctx context.Context, itemID, userID int64, body string) (*models.FeedbackComment, error) {
	if err := text("body", body, 1, 5000); err != nil {
		return nil, err
	}
	c := &models.FeedbackComment{ItemID: itemID, UserID: userID, Body: strings.TrimSpace(body)}
	var it *models.FeedbackItem
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if it, err = tx.FeedbackItemByID(ctx, itemID); err != nil {
			return err
		}
		if err := tx.CreateFeedbackComment(ctx, c); err != nil {
			return err
		}
		if it.UserID != userID {
			if err := s.notify(ctx, tx, it, fmt.Sprintf("New reply to your feedback %q", it.Title), c.Body); err != nil {
				return err
			}
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "feedback.commented", ObjectType: "feedback", ObjectID: fmt.Sprint(itemID)})
	})
	if err := notFoundAsField(err, itemID); err != nil {
		return nil, err
	}
	return c, nil
}

// Answer sets an item's status with a public answer, by an admin, and notifies the author.
func (s *Service) Answer(ctx context.Context, itemID, adminID int64, status, answer string) (*models.FeedbackItem, error) {
	if !slices.Contains(Statuses, status) {
		return nil, models.Invalid("status", "must be one of %s", strings.Join(Statuses, ", "))
	}
	if err := text("answer", answer, 0, 5000); err != nil {
		return nil, err
	}
	var it *models.FeedbackItem
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if it, err = tx.FeedbackItemByID(ctx, itemID); err != nil {
			return err
		}
		from := it.Status
		now := s.now().UTC()
		it.Status, it.Answer, it.AnsweredByID, it.AnsweredAt = status, strings.TrimSpace(answer), &adminID, &now
		if err := tx.UpdateFeedbackItem(ctx, it); err != nil {
			return err
		}
		if err := s.notify(ctx, tx, it, fmt.Sprintf("Your feedback %q is now %s", it.Title, status), it.Answer); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "feedback.answered", ObjectType: "feedback", ObjectID: fmt.Sprint(itemID),
			Detail: map[string]string{"from": from, "to": status, "answer": it.Answer}})
	})
	if err := notFoundAsField(err, itemID); err != nil {
		return nil, err
	}
	return it, nil
}

// notify tells the author in the portal and, when e-mail is set up, the author has an
// address and has not turned these e-mails off (SetEmails), queues the same by e-mail,
// all in tx.
func (s *Service) notify(ctx context.Context, tx *store.Store, it *models.FeedbackItem, title, body string) error {
	link := fmt.Sprintf("/feedback/%d", it.ID)
	if err := tx.CreateNotification(ctx, &models.Notification{UserID: it.UserID, Kind: "feedback", Title: title, Body: body, Link: link}); err != nil {
		return err
	}
	if s.mailer == nil {
		return nil
	}
	u, err := tx.UserByID(ctx, it.UserID)
	if err != nil || u.Email == "" {
		return err
	}
	return s.mailer.QueueMail(ctx, tx, s.now(), governance.Mail{To: u.Email, Subject: title, Body: body, Link: link,
		Topic: models.MailTopicFeedback, UserID: u.ID, OptOut: "/account"})
}

// EmailsOn is whether user is e-mailed about their feedback (on unless they turned it off).
func (s *Service) EmailsOn(ctx context.Context, userID int64) (bool, error) {
	off, err := s.store.MailOptedOut(ctx, userID, models.MailTopicFeedback)
	return !off, err
}

// SetEmails turns the e-mails about user's own feedback on or off; the notifications in
// the portal stay either way. Only a change is audited.
func (s *Service) SetEmails(ctx context.Context, userID int64, on bool) error {
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		u, err := tx.UserByID(ctx, userID)
		if err != nil {
			return err
		}
		changed, err := tx.SetMailOptOut(ctx, userID, models.MailTopicFeedback, !on)
		if err != nil || !changed {
			return err
		}
		action := "feedback.emails_off"
		if on {
			action = "feedback.emails_on"
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "user", ObjectID: u.Username})
	})
	if err != nil {
		return fmt.Errorf("set e-mails about feedback of user %d: %w", userID, err)
	}
	return nil
}

func notFoundAsField(err error, itemID int64) error {
	if errors.Is(err, store.ErrNotFound) {
		return models.Invalid("item", "no feedback item %d", itemID)
	}
	if err != nil {
		return fmt.Errorf("feedback item %d: %w", itemID, err)
	}
	return nil
}
