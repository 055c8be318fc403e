package governance

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Channel kinds.
const (
	ChannelWebhook = "webhook"
	ChannelEmail   = "email"
)

// ChannelInput is a notification channel as an admin writes it.
type ChannelInput struct {
	Name    string
	Kind    string
	Target  string // the webhook's URL, or an e-mail address
	Enabled bool
}

func validateChannel(in *ChannelInput) error {
	in.Name, in.Target = strings.TrimSpace(in.Name), strings.TrimSpace(in.Target)
	if in.Name == "" || len(in.Name) > 100 {
		return models.Invalid("name", "give a name of 1 to 100 characters")
	}
	switch in.Kind {
	case ChannelWebhook:
		u, err := url.Parse(in.Target)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return models.Invalid("target", "a webhook needs an http:// or https:// URL")
		}
	case ChannelEmail:
		a, err := mail.ParseAddress(in.Target)
		if err != nil {
			return models.Invalid("target", "%q is not an e-mail address", in.Target)
		}
		in.Target = a.Address
	default:
		return models.Invalid("kind", "%q is not a channel kind (webhook or email)", in.Kind)
	}
	return nil
}

// CreateChannel validates and adds a channel, audited (without its target, which may
// hold a secret).
func (s *Service) CreateChannel(ctx context.Context, in ChannelInput) (*models.NotificationChannel, error) {
	if err := validateChannel(&in); err != nil {
		return nil, err
	}
	c := &models.NotificationChannel{Name: in.Name, Kind: in.Kind, Target: in.Target, Enabled: in.Enabled}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateNotificationChannel(ctx, c); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "channel.created", ObjectType: "channel", ObjectID: fmt.Sprint(c.ID),
			Detail: map[string]any{"name": c.Name, "kind": c.Kind, "enabled": c.Enabled}})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("name", "a channel called %q exists already", in.Name)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// UpdateChannel validates and replaces channel id, audited.
func (s *Service) UpdateChannel(ctx context.Context, id int64, in ChannelInput) (*models.NotificationChannel, error) {
	if err := validateChannel(&in); err != nil {
		return nil, err
	}
	c := &models.NotificationChannel{ID: id, Name: in.Name, Kind: in.Kind, Target: in.Target, Enabled: in.Enabled}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UpdateNotificationChannel(ctx, c); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "channel.updated", ObjectType: "channel", ObjectID: fmt.Sprint(id),
			Detail: map[string]any{"name": c.Name, "kind": c.Kind, "enabled": c.Enabled}})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("name", "a channel called %q exists already", in.Name)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Channels returns every channel by name.
func (s *Service) Channels(ctx context.Context) ([]models.NotificationChannel, error) {
	return s.store.NotificationChannels(ctx)
}

// CanSend reports whether this service has a sender for channels of kind, e.g. whether
// an SMTP server is configured for e-mail.
func (s *Service) CanSend(kind string) bool { return s.senders[kind] != nil }
