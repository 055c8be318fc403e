package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	in, err := s.signIn(ctx, sessionSignIn, id, keys,
		&sess.ID, &sess.UserID, &sess.CSRFToken, &sess.IP, &sess.UserAgent, &sess.CreatedAt, &sess.LastSeenAt, &sess.ExpiresAt)
	if err != nil {
		return nil, nil, fmt.Errorf("session: %w", err)
	}
	return &sess, in, nil
}

// APITokenSignIn returns the token whose hash is hash, with its user and the settings keys.
func (s *Store) APITokenSignIn(ctx context.Context, hash string, keys ...string) (*models.APIToken, *SignIn, error) {
	var t models.APIToken
	in, err := s.signIn(ctx, tokenSignIn, hash, keys,
		&t.ID, &t.UserID, &t.Name, &t.Prefix, &t.Hash, &t.Scope, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt, &t.CreatedAt)
	if err != nil {
		return nil, nil, fmt.Errorf("API token: %w", err)
	}
	return &t, in, nil
}

// A credential is a table that signs a request in: its key column and the columns
// read, in the order of the caller's fields.
type credential struct {
	table, key string
	cols       []string
}

var (
	sessionSignIn = &credential{table: "sessions", key: "id",
		cols: []string{"id", "user_id", "csrf_token", "ip", "user_agent", "created_at", "last_seen_at", "expires_at"}}
	tokenSignIn = &credential{table: "api_tokens", key: "hash",
		cols: []string{"id", "user_id", "name", "prefix", "hash", "scope", "expires_at", "last_used_at", "revoked_at", "created_at"}}
)

// signInColumns are the user's columns a sign-in reads after the credential's: all but
// password_hash, which no signed-in request uses (UpdateUser never writes it, so a
// signed-in user saved back keeps theirs).
const signInColumns = 12

// signIn reads the row of c whose key column is value into dest (c.cols, in order),
// joined with its user, and the settings keys as scalar subqueries. It runs on every
// signed-in request, so it reads through readRows (no gorm; on SQLite, not behind the
// one writer; on PostgreSQL, through pgx itself). On SQLite the row comes back as one
// json_array() value: the driver reads each column through several calls, and one
// array costs less than its columns (see listedJobsQuery).
func (s *Store) signIn(ctx context.Context, c *credential, value string, keys []string, dest ...any) (*SignIn, error) {
	in := &SignIn{Settings: make(map[string]string, len(keys))}
	u := &in.User
	all := make([]any, 0, len(dest)+signInColumns+len(keys))
	all = append(all, dest...)
	all = append(all, &u.ID, &u.Username, &u.Email, &u.DisplayName, &u.Issuer, &u.Subject,
		&u.IsAdmin, &u.IsAuditor, &u.Disabled, &u.LastLoginAt, &u.CreatedAt, &u.UpdatedAt)
	values := make([]sql.NullString, len(keys))
	args := make([]any, 0, len(keys)+1)
	for i, k := range keys {
		all = append(all, &values[i])
		args = append(args, k)
	}
	args = append(args, value)
	found := false
	err := s.readRows(ctx, s.rowRead(s.signInSQL(c, len(keys)), args, all, &found))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	for i, k := range keys {
		if values[i].Valid {
			in.Settings[k] = values[i].String
		}
	}
	return in, nil
}

// signInKey is what the SQL of a sign-in depends on: the settings' keys are
// arguments, so only their number is in the text.
type signInKey struct {
	credential *credential
	keys       int
}

// signInSQL is the query of a sign-in of c with keys settings, written once per Store
// (writing it was about sixteen allocations a request).
func (s *Store) signInSQL(c *credential, keys int) string {
	k := signInKey{credential: c, keys: keys}
	if q, ok := s.sqlTexts.Load(k); ok {
		return q.(string)
	}
	exprs := make([]string, 0, len(c.cols)+signInColumns+keys)
	for _, col := range c.cols {
		exprs = append(exprs, "c."+col)
	}
	exprs = append(exprs, "u.id", "u.username", "u.email", "u.display_name", "u.issuer", "u.subject",
		"u.is_admin", "u.is_auditor", "u.disabled", "u.last_login_at", "u.created_at", "u.updated_at")
	for i := range keys {
		exprs = append(exprs, "(SELECT value FROM settings WHERE key = "+s.param(i+1)+")")
	}
	q := s.selectRows(strings.Join(exprs, ", "), c.table+" c JOIN users u ON u.id = c.user_id WHERE c."+c.key+" = "+s.param(keys+1))
	s.sqlTexts.Store(k, q)
	return q
}

// scanJSONArray reads the array that SQLite's json_array() writes (no spaces; strings,
// integers and nulls) into dest, which holds *string, *int64, *int, *bool, *time.Time,
// **time.Time, **int64, **int and *sql.NullString: what signIn and ListedJobs read,
// without reflection.
func scanJSONArray(row string, dest []any) error {
	rest, ok := strings.CutPrefix(row, "[")
	if !ok {
		return fmt.Errorf("scan a json_array row: it does not start with [: %.40q", row)
	}
	for i, d := range dest {
		var raw string
		var isString bool
		var err error
		raw, isString, rest, err = nextJSONValue(rest)
		if err != nil {
			return fmt.Errorf("scan a json_array row, value %d: %w", i, err)
		}
		if err := assignJSONValue(d, raw, isString); err != nil {
			return fmt.Errorf("scan a json_array row, value %d: %w", i, err)
		}
		sep := byte(']')
		if i < len(dest)-1 {
			sep = ','
		}
		if rest == "" || rest[0] != sep {
			return fmt.Errorf("scan a json_array row: want %q after value %d", sep, i)
		}
		rest = rest[1:]
	}
	if rest != "" {
		return errors.New("scan a json_array row: more values than wanted")
	}
	return nil
}

// scanJSONStrings reads the array of texts that SQLite's json_group_array() writes (no
// spaces; [] for no rows). Texts without escapes are cut out of row, not copied.
func scanJSONStrings(row string) ([]string, error) {
	rest, ok := strings.CutPrefix(row, "[")
	if !ok {
		return nil, fmt.Errorf("scan a json_group_array row: it does not start with [: %.40q", row)
	}
	if rest == "]" {
		return nil, nil
	}
	out := make([]string, 0, strings.Count(rest, ",")+1)
	for {
		value, isString, after, err := nextJSONValue(rest)
		if err != nil {
			return nil, fmt.Errorf("scan a json_group_array row, value %d: %w", len(out), err)
		}
		if !isString {
			return nil, fmt.Errorf("scan a json_group_array row, value %d: want text, got %s", len(out), value)
		}
		out = append(out, value)
		switch {
		case after == "]":
			return out, nil
		case after == "" || after[0] != ',':
			return nil, fmt.Errorf("scan a json_group_array row: want ',' or ']' after value %d", len(out)-1)
		}
		rest = after[1:]
	}
}

// nextJSONValue cuts the first value off s: a string's text (unescaped), or a literal
// (number, null) as written. The ends are found by IndexByte, not byte by byte: this
// runs for every value of every row a request reads.
func nextJSONValue(s string) (value string, isString bool, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		end := 0
		for end < len(s) && s[end] != ',' && s[end] != ']' {
			end++
		}
		if end == 0 || end == len(s) {
			return "", false, "", errors.New("missing value")
		}
		return s[:end], false, s[end:], nil
	}
	end := strings.IndexByte(s[1:], '"') + 1
	if end == 0 {
		return "", false, "", errors.New("unterminated string")
	}
	if strings.IndexByte(s[1:end], '\\') < 0 {
		return s[1:end], true, s[end+1:], nil
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped character, which may be a quote
		case '"':
			var v string
			if err := json.Unmarshal([]byte(s[:i+1]), &v); err != nil {
				return "", false, "", err
			}
			return v, true, s[i+1:], nil
		}
	}
	return "", false, "", errors.New("unterminated string")
}

// assignJSONValue stores one value of a json_array row in dest.
func assignJSONValue(dest any, raw string, isString bool) error {
	null := !isString && raw == "null"
	switch d := dest.(type) {
	case *string:
		if !isString {
			return fmt.Errorf("want text, got %s", raw)
		}
		*d = raw
	case *sql.NullString:
		if !null && !isString {
			return fmt.Errorf("want text or null, got %s", raw)
		}
		*d = sql.NullString{String: raw, Valid: !null}
	case *int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if isString || err != nil {
			return fmt.Errorf("want an integer, got %q", raw)
		}
		*d = n
	case *int:
		n, err := strconv.Atoi(raw)
		if isString || err != nil {
			return fmt.Errorf("want an integer, got %q", raw)
		}
		*d = n
	case **int64:
		if null {
			*d = nil
			return nil
		}
		var n int64
		if err := assignJSONValue(&n, raw, isString); err != nil {
			return err
		}
		*d = &n
	case **int:
		if null {
			*d = nil
			return nil
		}
		var n int
		if err := assignJSONValue(&n, raw, isString); err != nil {
			return err
		}
		*d = &n
	case *bool:
		n, err := strconv.ParseInt(raw, 10, 64)
		if isString || err != nil {
			return fmt.Errorf("want 0 or 1, got %q", raw)
		}
		*d = n != 0
	case *time.Time:
		if !isString {
			return fmt.Errorf("want a time, got %s", raw)
		}
		var t dbTime
		if err := t.parse(raw); err != nil {
			return err
		}
		*d = time.Time(t)
	case **time.Time:
		if null {
			*d = nil
			return nil
		}
		var t time.Time
		if err := assignJSONValue(&t, raw, isString); err != nil {
			return err
		}
		*d = &t
	default:
		return fmt.Errorf("cannot scan into %T", dest)
	}
	return nil
}
