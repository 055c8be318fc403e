package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// SignIn is what a request's credential stands for, read in one query: every
// signed-in request starts with it, and three round trips cost more than the query.
type SignIn struct {
	User models.User
	// Settings are the values of the settings asked for; a key never set is absent.
	Settings map[string]string
}

// SessionSignIn returns the session whose id (the hash of its cookie) is id, with its
// user and the settings keys.
func (s *Store) SessionSignIn(ctx context.Context, id string, keys ...string) (*models.Session, *SignIn, error) {
	var sess models.Session
	in, err := s.signIn(ctx, "sessions", "id", id, keys,
		[]string{"id", "user_id", "csrf_token", "ip", "user_agent", "created_at", "last_seen_at", "expires_at"},
		&sess.ID, &sess.UserID, &sess.CSRFToken, &sess.IP, &sess.UserAgent, &sess.CreatedAt, &sess.LastSeenAt, &sess.ExpiresAt)
	if err != nil {
		return nil, nil, fmt.Errorf("session: %w", err)
	}
	return &sess, in, nil
}

// APITokenSignIn returns the token whose hash is hash, with its user and the settings keys.
func (s *Store) APITokenSignIn(ctx context.Context, hash string, keys ...string) (*models.APIToken, *SignIn, error) {
	var t models.APIToken
	in, err := s.signIn(ctx, "api_tokens", "hash", hash, keys,
		[]string{"id", "user_id", "name", "prefix", "hash", "scope", "expires_at", "last_used_at", "revoked_at", "created_at"},
		&t.ID, &t.UserID, &t.Name, &t.Prefix, &t.Hash, &t.Scope, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt, &t.CreatedAt)
	if err != nil {
		return nil, nil, fmt.Errorf("API token: %w", err)
	}
	return &t, in, nil
}

// signIn reads the row of table whose column key is value into dest (cols, in order),
// joined with its user, and the settings keys as scalar subqueries.
func (s *Store) signIn(ctx context.Context, table, key, value string, keys, cols []string, dest ...any) (*SignIn, error) {
	in := &SignIn{Settings: make(map[string]string, len(keys))}
	u := &in.User
	var q strings.Builder
	q.WriteString("SELECT ")
	for _, c := range cols {
		q.WriteString("c." + c + ", ")
	}
	q.WriteString("u.id, u.username, u.email, u.display_name, u.issuer, u.subject, u.password_hash, u.is_admin, u.is_auditor, u.disabled, u.last_login_at, u.created_at, u.updated_at")
	dest = append(dest, &u.ID, &u.Username, &u.Email, &u.DisplayName, &u.Issuer, &u.Subject, &u.PasswordHash, &u.IsAdmin, &u.IsAuditor, &u.Disabled, &u.LastLoginAt, &u.CreatedAt, &u.UpdatedAt)
	values := make([]sql.NullString, len(keys))
	args := make([]any, 0, len(keys)+1)
	for i, k := range keys {
		q.WriteString(", (SELECT value FROM settings WHERE key = ?)")
		dest = append(dest, &values[i])
		args = append(args, k)
	}
	fmt.Fprintf(&q, " FROM %s c JOIN users u ON u.id = c.user_id WHERE c.%s = ?", table, key)
	rows, err := s.with(ctx).Raw(q.String(), append(args, value)...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	for i, k := range keys {
		if values[i].Valid {
			in.Settings[k] = values[i].String
		}
	}
	return in, rows.Err()
}
