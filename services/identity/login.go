package identity

import (
	"context"
	"errors"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Audit actions of logins.
const (
	ActionLogin        = "login"
	ActionLoginFailed  = "login.failed"  // counted for rate limiting
	ActionLoginRefused = "login.refused" // turned away before a password was checked, or disabled
)

// localLoginKey is the setting that turns password login off ("off") once SSO works.
const localLoginKey = "auth.local_login"

// LoginLocal checks a username and password and returns the user. The source address comes
// from the audit actor of ctx. Too many recent failures for the account or the address are
// refused before the password is even checked; every outcome is audited.
func (s *Service) LoginLocal(ctx context.Context, username, password string) (*models.User, error) {
	a := audit.ActorFrom(ctx)
	a.Name, a.Type = username, models.ActorUser
	ctx = audit.WithActor(ctx, a)
	on, err := s.LocalLoginEnabled(ctx)
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, s.refuse(ctx, ActionLoginRefused, "password login is off", ErrLocalLoginOff)
	}
	if err := s.checkFailures(ctx, username, a.IP); err != nil {
		var rl *RateLimitError
		if errors.As(err, &rl) {
			return nil, s.refuse(ctx, ActionLoginRefused, "too many failed logins for this "+rl.Scope, err)
		}
		return nil, err
	}
	u, err := s.store.UserByUsernameWithPassword(ctx, username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		_ = bcrypt.CompareHashAndPassword(s.decoy(), []byte(password))
		return nil, s.refuse(ctx, ActionLoginFailed, "no such user", ErrBadCredentials)
	case err != nil:
		return nil, err
	case u.PasswordHash == "":
		_ = bcrypt.CompareHashAndPassword(s.decoy(), []byte(password))
		return nil, s.refuse(ctx, ActionLoginFailed, "the user signs in through single sign-on and has no password", ErrBadCredentials)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, s.refuse(ctx, ActionLoginFailed, "wrong password", ErrBadCredentials)
	}
	// The hash goes no further than this check: the user returned reaches handlers.
	u.PasswordHash = ""
	if u.Disabled {
		return nil, s.refuse(ctx, ActionLoginRefused, "account disabled", ErrDisabled)
	}
	return u, s.store.InTx(ctx, func(tx *store.Store) error {
		return s.loggedIn(ctx, tx, u, map[string]any{"method": "password"})
	})
}

// loggedIn records a successful login in tx, with detail saying how.
func (s *Service) loggedIn(ctx context.Context, tx *store.Store, u *models.User, detail map[string]any) error {
	now := s.now().UTC()
	u.LastLoginAt = &now
	if err := tx.UpdateUser(ctx, u); err != nil {
		return err
	}
	return s.audit.In(tx).Append(ctx, audit.Entry{Action: ActionLogin, ObjectType: "user", ObjectID: u.Username, Detail: detail})
}

// refuse audits a refused login and returns err, or the audit's failure.
func (s *Service) refuse(ctx context.Context, action, reason string, err error) error {
	if aerr := s.audit.Append(ctx, audit.Entry{Action: action, ObjectType: "user", ObjectID: audit.ActorFrom(ctx).Name,
		Detail: map[string]string{"reason": reason}}); aerr != nil {
		return aerr
	}
	return err
}

// checkFailures refuses when the account or the address failed too often within the window.
// The count comes from the audit log, so it holds across replicas and restarts.
func (s *Service) checkFailures(ctx context.Context, username, ip string) error {
	now := s.now().UTC()
	since := now.Add(-s.opts.FailureWindow)
	for _, c := range []struct {
		scope string
		f     store.AuditFilter
		max   int
	}{
		{"account", store.AuditFilter{Action: ActionLoginFailed, Actor: username, Since: since}, s.opts.MaxFailsAccount},
		{"address", store.AuditFilter{Action: ActionLoginFailed, SourceIP: ip, Since: since}, s.opts.MaxFailsIP},
	} {
		if c.scope == "address" && ip == "" {
			continue
		}
		recent, err := s.store.AuditEventsBefore(ctx, c.f, 0, c.max)
		if err != nil {
			return err
		}
		if len(recent) < c.max {
			continue
		}
		// Locked until the oldest of the last max failures leaves the window.
		if until := recent[c.max-1].At.Add(s.opts.FailureWindow); until.After(now) {
			return &RateLimitError{Scope: c.scope, RetryAfter: until.Sub(now)}
		}
	}
	return nil
}

// LocalLoginEnabled reports whether password login is on (it is until an admin turns it off).
func (s *Service) LocalLoginEnabled(ctx context.Context) (bool, error) {
	v, _, err := s.store.Setting(ctx, localLoginKey)
	return v != "off", err
}

// SetLocalLogin turns password login on or off, audited.
func (s *Service) SetLocalLogin(ctx context.Context, on bool) error {
	v := "on"
	if !on {
		v = "off"
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.PutSetting(ctx, localLoginKey, v); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "settings.changed", ObjectType: "setting", ObjectID: localLoginKey,
			Detail: map[string]string{"local_login": v}})
	})
}
