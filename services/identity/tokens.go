package identity

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// API token scopes.
const (
	ScopeRead  = "read"  // GET and HEAD only
	ScopeWrite = "write" // everything the user may do
)

// Token lifetimes allowed.
const (
	MinTokenTTL = 24 * time.Hour
	MaxTokenTTL = 365 * 24 * time.Hour
)

// tokenShape is what CreateToken hands out: "gty_" and 32 random bytes, URL-safe base64.
var tokenShape = regexp.MustCompile(`^gty_[A-Za-z0-9_-]{43}$`)

// CreateToken makes a personal API token for u and returns its secret, which is shown once
// (the database keeps its hash and its first characters, to tell tokens apart).
func (s *Service) CreateToken(ctx context.Context, u *models.User, name, scope string, ttl time.Duration) (string, *models.APIToken, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "" || utf8.RuneCountInString(name) > 64:
		return "", nil, models.Invalid("name", "give the token a name of 1 to 64 characters, e.g. the script that uses it")
	case scope != ScopeRead && scope != ScopeWrite:
		return "", nil, models.Invalid("scope", "%q is not a scope: want read or write", scope)
	case ttl < MinTokenTTL || ttl > MaxTokenTTL:
		return "", nil, models.Invalid("expires", "a token lives 1 to 365 days")
	}
	secret := "gty_" + randomSecret(32)
	expires := s.now().UTC().Add(ttl)
	t := &models.APIToken{UserID: u.ID, Name: name, Prefix: secret[:12], Hash: digest(secret), Scope: scope, ExpiresAt: &expires}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateAPIToken(ctx, t); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "token.created", ObjectType: "token", ObjectID: fmt.Sprint(t.ID),
			Detail: map[string]string{"user": u.Username, "name": name, "scope": scope, "prefix": t.Prefix, "expires": expires.Format(time.RFC3339)}})
	})
	if err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Token returns the caller of an API token secret; anything but a live token of an
// enabled user is ErrUnauthenticated with the reason.
func (s *Service) Token(ctx context.Context, secret string) (*Principal, error) {
	if !tokenShape.MatchString(secret) {
		return nil, fmt.Errorf("%w: that is not a Gantry API token (they start with gty_)", ErrUnauthenticated)
	}
	t, in, err := s.store.APITokenSignIn(ctx, digest(secret), authz.VersionKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: unknown API token", ErrUnauthenticated)
	}
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	switch {
	case t.RevokedAt != nil:
		return nil, fmt.Errorf("%w: API token %s… was revoked", ErrUnauthenticated, t.Prefix)
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return nil, fmt.Errorf("%w: API token %s… expired at %s", ErrUnauthenticated, t.Prefix, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	u := &in.User
	if u.Disabled {
		return nil, fmt.Errorf("%w: %v", ErrUnauthenticated, ErrDisabled)
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= touchEvery {
		if err := s.store.TouchAPIToken(ctx, t.ID, now); err != nil {
			return nil, err
		}
		t.LastUsedAt = &now
	}
	return &Principal{User: u, Token: t, PolicyVersion: in.Settings[authz.VersionKey]}, nil
}

// TokenInfo is a token as its owner sees it in the list.
type TokenInfo struct {
	models.APIToken
	Status string // active, expired or revoked
}

// Tokens returns the user's tokens, newest first.
func (s *Service) Tokens(ctx context.Context, u *models.User) ([]TokenInfo, error) {
	tokens, err := s.store.APITokensOfUser(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]TokenInfo, len(tokens))
	for i, t := range tokens {
		out[i] = TokenInfo{APIToken: t, Status: "active"}
		switch {
		case t.RevokedAt != nil:
			out[i].Status = "revoked"
		case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
			out[i].Status = "expired"
		}
	}
	return out, nil
}

// RevokeToken revokes one of u's own tokens, audited. Another user's token is
// store.ErrNotFound, so that its existence is not disclosed.
func (s *Service) RevokeToken(ctx context.Context, u *models.User, id int64) error {
	t, err := s.store.APITokenByID(ctx, id)
	if err == nil && t.UserID != u.ID {
		err = fmt.Errorf("API token %d: %w: %w", id, ErrNotYours, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.RevokeAPIToken(ctx, id, s.now()); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "token.revoked", ObjectType: "token", ObjectID: fmt.Sprint(id),
			Detail: map[string]string{"user": u.Username, "name": t.Name, "prefix": t.Prefix}})
	})
}
