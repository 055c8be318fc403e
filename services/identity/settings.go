package identity

import (
	"context"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// Settings keys of the session lifetimes an admin set in the console; unset, the flags hold.
const (
	sessionIdleKey     = "auth.session_idle"
	sessionLifetimeKey = "auth.session_lifetime"
)

// Bounds of the session lifetimes the console accepts.
const (
	MinSessionIdle     = 5 * time.Minute
	MaxSessionIdle     = 30 * 24 * time.Hour
	MinSessionLifetime = time.Hour
	MaxSessionLifetime = 90 * 24 * time.Hour
)

// LoginSettings are the sign-in settings an admin changes from the console.
type LoginSettings struct {
	LocalLogin      bool
	SessionIdle     time.Duration
	SessionLifetime time.Duration
}

// signInKeys are the settings read with a session: its lifetimes, which judge it, and
// the authorization policy version, at which the request's permissions are asked.
var signInKeys = []string{sessionIdleKey, sessionLifetimeKey, authz.VersionKey}

// LoginSettings returns the sign-in settings in force.
func (s *Service) LoginSettings(ctx context.Context) (LoginSettings, error) {
	v, err := s.store.Settings(ctx, localLoginKey, sessionIdleKey, sessionLifetimeKey)
	if err != nil {
		return LoginSettings{}, err
	}
	return s.loginSettings(v), nil
}

// loginSettings reads the sign-in settings from their settings rows.
func (s *Service) loginSettings(v map[string]string) LoginSettings {
	ls := LoginSettings{LocalLogin: v[localLoginKey] != "off", SessionIdle: s.opts.SessionIdle, SessionLifetime: s.opts.SessionAbsolute}
	// A value this version cannot read (written by hand, say) leaves the flag's in force.
	if d, ok := duration(v[sessionIdleKey]); ok {
		ls.SessionIdle = d
	}
	if d, ok := duration(v[sessionLifetimeKey]); ok {
		ls.SessionLifetime = d
	}
	return ls
}

// duration reads a positive duration setting. One never set is not parsed: every
// request reads the session settings, and time.ParseDuration builds an error for "".
func duration(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d > 0
}

// UpdateLoginSettings changes the sign-in settings, auditing what changed. Password login
// cannot be turned off while single sign-on is not configured: nobody could sign in.
func (s *Service) UpdateLoginSettings(ctx context.Context, in LoginSettings) error {
	switch {
	case !in.LocalLogin && !s.SSOEnabled():
		return models.Invalid("local_login", "single sign-on is not configured, so turning password login off would leave no way to sign in: start gantry serve with --oidc-issuer (see the README), sign in through it once, then turn password login off")
	case in.SessionIdle < MinSessionIdle || in.SessionIdle > MaxSessionIdle:
		return models.Invalid("session_idle", "%s is outside the allowed %s to %s", in.SessionIdle, MinSessionIdle, MaxSessionIdle)
	case in.SessionLifetime < MinSessionLifetime || in.SessionLifetime > MaxSessionLifetime:
		return models.Invalid("session_lifetime", "%s is outside the allowed %s to %s", in.SessionLifetime, MinSessionLifetime, MaxSessionLifetime)
	case in.SessionIdle > in.SessionLifetime:
		return models.Invalid("session_idle", "%s is longer than the session lifetime %s: a session cannot idle longer than it lives", in.SessionIdle, in.SessionLifetime)
	}
	current, err := s.LoginSettings(ctx)
	if err != nil {
		return err
	}
	onOff := map[bool]string{true: "on", false: "off"}
	changes := map[string]map[string]string{}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		for _, c := range []struct {
			key, from, to string
		}{
			{localLoginKey, onOff[current.LocalLogin], onOff[in.LocalLogin]},
			{sessionIdleKey, current.SessionIdle.String(), in.SessionIdle.String()},
			{sessionLifetimeKey, current.SessionLifetime.String(), in.SessionLifetime.String()},
		} {
			if c.from == c.to {
				continue
			}
			if err := tx.PutSetting(ctx, c.key, c.to); err != nil {
				return err
			}
			changes[c.key] = map[string]string{"from": c.from, "to": c.to}
		}
		if len(changes) == 0 {
			return nil
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "settings.changed", ObjectType: "setting", ObjectID: "login", Detail: changes})
	})
}
