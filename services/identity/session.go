package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// touchEvery bounds how often a session's last use is written: not on every request.
const touchEvery = time.Minute

// cookieLength is the length of what StartSession hands out: 32 random bytes in
// URL-safe base64 without padding.
const cookieLength = 43

// cookieShaped says whether cookie is shaped as StartSession's are, checked by hand
// rather than by a regular expression, on every request.
func cookieShaped(cookie string) bool {
	if len(cookie) != cookieLength {
		return false
	}
	for i := range len(cookie) {
		switch c := cookie[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// StartSession begins a browser session for u and returns the cookie value, which only the
// browser keeps (the database has its hash). previous is the cookie the browser came with:
// that session ends, so a session id is never carried across a login.
func (s *Service) StartSession(ctx context.Context, u *models.User, previous, userAgent string) (string, *models.Session, error) {
	now := s.now().UTC()
	ls, err := s.LoginSettings(ctx)
	if err != nil {
		return "", nil, err
	}
	if previous != "" {
		if err := s.store.DeleteSession(ctx, digest(previous)); err != nil {
			return "", nil, err
		}
	}
	if _, err := s.store.DeleteDeadSessions(ctx, now, now.Add(-ls.SessionIdle)); err != nil {
		return "", nil, err
	}
	cookie := randomSecret(32)
	if len(userAgent) > 200 {
		userAgent = userAgent[:200]
	}
	sess := &models.Session{
		ID: digest(cookie), UserID: u.ID, CSRFToken: randomSecret(32),
		IP: audit.ActorFrom(ctx).IP, UserAgent: userAgent,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(ls.SessionLifetime),
	}
	if err := s.store.CreateSession(ctx, sess); err != nil {
		return "", nil, err
	}
	return cookie, sess, nil
}

// Session returns the live session of a cookie and its user. Anything else — a malformed
// or unknown cookie, an expired session, a disabled user — is ErrUnauthenticated with the reason.
func (s *Service) Session(ctx context.Context, cookie string) (*Principal, error) {
	if !cookieShaped(cookie) {
		return nil, fmt.Errorf("%w: malformed session cookie", ErrUnauthenticated)
	}
	sess, in, err := s.store.SessionSignIn(ctx, digest(cookie), signInKeys...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: unknown or ended session", ErrUnauthenticated)
	}
	if err != nil {
		return nil, err
	}
	ls := s.loginSettings(in.Settings)
	now := s.now().UTC()
	var dead string
	switch {
	// A lifetime shortened since the session began holds for it too.
	case !now.Before(sess.ExpiresAt) || !now.Before(sess.CreatedAt.Add(ls.SessionLifetime)):
		dead = fmt.Sprintf("session expired: sessions last at most %s", ls.SessionLifetime)
	case now.Sub(sess.LastSeenAt) > ls.SessionIdle:
		dead = fmt.Sprintf("session expired after %s without use", ls.SessionIdle)
	}
	if dead != "" {
		if err := s.store.DeleteSession(ctx, sess.ID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", ErrUnauthenticated, dead)
	}
	u := &in.User
	if u.Disabled {
		if _, err := s.store.DeleteSessionsOfUser(ctx, u.ID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrUnauthenticated, ErrDisabled)
	}
	if now.Sub(sess.LastSeenAt) >= touchEvery {
		if err := s.store.TouchSession(ctx, sess.ID, now); err != nil {
			return nil, err
		}
		sess.LastSeenAt = now
	}
	return &Principal{User: u, Session: sess, PolicyVersion: in.Settings[authz.VersionKey]}, nil
}

// EndSession logs the principal's browser session out and audits it.
func (s *Service) EndSession(ctx context.Context, p *Principal) error {
	if p.Session == nil {
		return errors.New("end session: the caller has no browser session")
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteSession(ctx, p.Session.ID); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "logout", ObjectType: "user", ObjectID: p.User.Username})
	})
}
