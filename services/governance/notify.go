package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Message is one alert as channels send it.
type Message struct {
	Subject string       // one line
	Text    string       // plain text: summary, evidence, link
	Alert   AlertPayload // the same, structured, for webhooks
}

// AlertPayload is the alert in a webhook's JSON.
type AlertPayload struct {
	ID       int64           `json:"id"`
	Rule     string          `json:"rule"`
	Metric   string          `json:"metric"`
	Scope    string          `json:"scope"`
	ScopeID  int64           `json:"scope_id"`
	State    string          `json:"state"`
	FiredAt  time.Time       `json:"fired_at"`
	Summary  string          `json:"summary"`
	Evidence json.RawMessage `json:"evidence"`
	Action   json.RawMessage `json:"action,omitempty"`
	URL      string          `json:"url,omitempty"`
}

// message renders alert a of rule r.
func (s *Service) message(a models.Alert, r models.AlertRule) Message {
	var ev map[string]any
	_ = json.Unmarshal([]byte(a.Evidence), &ev)
	summary, _ := ev["summary"].(string)
	p := AlertPayload{ID: a.ID, Rule: r.Name, Metric: r.Metric, Scope: a.Scope, ScopeID: a.ScopeID, State: a.State,
		FiredAt: a.FiredAt.UTC(), Summary: summary, Evidence: json.RawMessage(a.Evidence)}
	if a.ActionTaken != "" {
		p.Action = json.RawMessage(a.ActionTaken)
	}
	if s.cfg.PortalURL != "" {
		p.URL = fmt.Sprintf("%s/alerts/%d", strings.TrimRight(s.cfg.PortalURL, "/"), a.ID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nRule: %s (%s)\nFired: %s\n", summary, r.Name, r.Metric, p.FiredAt.Format(time.RFC3339))
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if k != "summary" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b.WriteString("\nEvidence:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %v\n", k, ev[k])
	}
	if rec, ok := Action(a); ok {
		mode := ""
		if rec.DryRun {
			mode = " (dry run: nothing was changed)"
		}
		fmt.Fprintf(&b, "\nAction: %s%s on %d job(s)\n", rec.Kind, mode, len(rec.Jobs))
	}
	if p.URL != "" {
		fmt.Fprintf(&b, "\n%s\n", p.URL)
	}
	return Message{Subject: fmt.Sprintf("[Gantry] %s: %s", r.Name, summary), Text: b.String(), Alert: p}
}

// DeliveryReport says what one Deliver call did.
type DeliveryReport struct {
	Sent, Retrying int
	// Withdrawn is how many e-mails were not sent, as their recipients turned their
	// topic off after they were queued.
	Withdrawn int
	// Pruned is how many ended e-mails were deleted, older than MailRetention.
	Pruned int64
	// Failed lists notifications given up on after the last attempt, with why.
	Failed []string
}

// Deliver sends the alert notifications and the queued e-mails (QueueMail) due at now,
// each bounded by SendTimeout. A failure is retried after FirstRetry, doubling up to
// MaxRetry, and reported as failed after MaxAttempts tries. It never holds a database
// transaction while it sends. E-mails ended longer than MailRetention ago are deleted.
func (s *Service) Deliver(ctx context.Context, now time.Time) (DeliveryReport, error) {
	now = now.UTC()
	var rep DeliveryReport
	if err := s.deliverAlerts(ctx, now, &rep); err != nil {
		return rep, err
	}
	if err := s.deliverMails(ctx, now, &rep); err != nil {
		return rep, err
	}
	var err error
	rep.Pruned, err = s.store.DeleteEndedOutboxMails(ctx, now.Add(-s.cfg.MailRetention))
	return rep, err
}

// deliverAlerts sends the alert notifications due at now.
func (s *Service) deliverAlerts(ctx context.Context, now time.Time, rep *DeliveryReport) error {
	due, err := s.store.DueAlertDeliveries(ctx, now, 100)
	if err != nil {
		return err
	}
	if len(due) == 0 {
		return nil
	}
	channels, err := s.store.NotificationChannels(ctx)
	if err != nil {
		return err
	}
	byID := map[int64]models.NotificationChannel{}
	for _, c := range channels {
		byID[c.ID] = c
	}
	rules := map[int64]*models.AlertRule{}
	for i := range due {
		d := &due[i]
		err := s.deliver(ctx, d, byID, rules)
		switch s.tried(now, &d.Delivery, err) {
		case models.DeliverySent:
			rep.Sent++
		case models.DeliveryFailed:
			rep.Failed = append(rep.Failed, fmt.Sprintf("alert #%d via channel %d: gave up after %d attempts: %s", d.AlertID, d.ChannelID, d.Attempts, d.LastError))
			s.log.Error("notification failed for good", "alert", d.AlertID, "channel", d.ChannelID, "attempts", d.Attempts, "err", err)
		default:
			rep.Retrying++
			s.log.Warn("notification failed; will retry", "alert", d.AlertID, "channel", d.ChannelID, "attempts", d.Attempts, "next", d.NextAttemptAt, "err", err)
		}
		if err := s.store.UpdateAlertDelivery(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// deliver sends one notification.
func (s *Service) deliver(ctx context.Context, d *models.AlertDelivery, channels map[int64]models.NotificationChannel, rules map[int64]*models.AlertRule) error {
	ch, ok := channels[d.ChannelID]
	if !ok || !ch.Enabled {
		return fmt.Errorf("channel %d is gone or disabled", d.ChannelID)
	}
	sender := s.senders[ch.Kind]
	if sender == nil {
		return fmt.Errorf("no sender for %s channels is configured", ch.Kind)
	}
	a, err := s.store.AlertByID(ctx, d.AlertID)
	if err != nil {
		return err
	}
	r := rules[a.RuleID]
	if r == nil {
		if r, err = s.store.AlertRuleByID(ctx, a.RuleID); err != nil {
			return err
		}
		rules[a.RuleID] = r
	}
	sendCtx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	defer cancel()
	return sender.Send(sendCtx, ch, s.message(*a, *r))
}

// backoff is the wait after the n-th failed attempt: FirstRetry doubled n-1 times, at most MaxRetry.
// tried records one try that ended with err on a delivery's retry state and returns
// its state now: sent, failed for good after the last allowed try, or still pending
// with its next try after the back-off.
func (s *Service) tried(now time.Time, d *models.Delivery, err error) string {
	d.Attempts++
	switch {
	case err == nil:
		d.State, d.SentAt, d.LastError = models.DeliverySent, &now, ""
	case d.Attempts >= s.cfg.MaxAttempts:
		d.State, d.LastError = models.DeliveryFailed, oneLine(err)
	default:
		d.LastError, d.NextAttemptAt = oneLine(err), now.Add(s.backoff(d.Attempts))
	}
	return d.State
}

func (s *Service) backoff(n int) time.Duration {
	d := s.cfg.FirstRetry
	for i := 1; i < n && d < s.cfg.MaxRetry; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxRetry)
}

func oneLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}
