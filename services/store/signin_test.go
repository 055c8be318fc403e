package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestSignInReadsCredentialUserAndSettingsTogether(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		u, _ := fixture(t, s)
		u.DisplayName, u.IsAuditor, u.LastLoginAt = "Ada L.", true, &now
		if err := s.UpdateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSetting(ctx, "a.key", "a value"); err != nil {
			t.Fatal(err)
		}
		sess := &models.Session{ID: "hash-of-cookie", UserID: u.ID, CSRFToken: "csrf", IP: "192.0.2.1", UserAgent: "test",
			CreatedAt: now, LastSeenAt: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		got, in, err := s.SessionSignIn(ctx, "hash-of-cookie", "a.key", "never.set")
		if err != nil {
			t.Fatal(err)
		}
		if got.UserID != u.ID || got.CSRFToken != "csrf" || got.IP != "192.0.2.1" || got.UserAgent != "test" ||
			!got.CreatedAt.Equal(now) || !got.LastSeenAt.Equal(now.Add(time.Minute)) || !got.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Errorf("session = %+v, want %+v", got, sess)
		}
		if in.User.ID != u.ID || in.User.Username != "ada" || in.User.Email != "ada@example.com" || in.User.DisplayName != "Ada L." ||
			!in.User.IsAuditor || in.User.IsAdmin || in.User.LastLoginAt == nil || !in.User.LastLoginAt.Equal(now) {
			t.Errorf("user = %+v", in.User)
		}
		if len(in.Settings) != 1 || in.Settings["a.key"] != "a value" {
			t.Errorf("settings = %v, want only a.key (never.set is absent)", in.Settings)
		}
		if _, _, err := s.SessionSignIn(ctx, "no-such-session"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown session: %v, want ErrNotFound", err)
		}

		expires := now.Add(24 * time.Hour)
		tok := &models.APIToken{UserID: u.ID, Name: "ci", Prefix: "gty_abcdefgh", Hash: "hash-of-token", Scope: "read", ExpiresAt: &expires}
		if err := s.CreateAPIToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		gotTok, in, err := s.APITokenSignIn(ctx, "hash-of-token", "a.key")
		if err != nil {
			t.Fatal(err)
		}
		if gotTok.ID != tok.ID || gotTok.Name != "ci" || gotTok.Prefix != "gty_abcdefgh" || gotTok.Scope != "read" ||
			gotTok.ExpiresAt == nil || !gotTok.ExpiresAt.Equal(expires) || gotTok.RevokedAt != nil || gotTok.LastUsedAt != nil {
			t.Errorf("token = %+v", gotTok)
		}
		if in.User.Username != "ada" || in.Settings["a.key"] != "a value" {
			t.Errorf("token's user %q and settings %v", in.User.Username, in.Settings)
		}
		if _, _, err := s.APITokenSignIn(ctx, "no-such-token"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown token: %v, want ErrNotFound", err)
		}
	})
}

// Sign-in reads text exactly whatever it holds (on SQLite the row travels as a JSON
// array), and times and nulls as they were written.
func TestSignInReadsAnyText(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		u, _ := fixture(t, s)
		u.DisplayName = "Ada \"the\" \\ L.\n\t☃ 𝄞 \x01 ],[null"
		u.Email = `a"d,a]@example.com`
		if err := s.UpdateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSetting(ctx, "a.key", `["not", "an array"]`); err != nil {
			t.Fatal(err)
		}
		sess := &models.Session{ID: "h", UserID: u.ID, CSRFToken: "c", IP: "2001:db8::1", UserAgent: `Mozilla/5.0 "x" \ ]`,
			CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		got, in, err := s.SessionSignIn(ctx, "h", "a.key", "never.set", "a.key")
		if err != nil {
			t.Fatal(err)
		}
		if got.UserAgent != sess.UserAgent || got.IP != sess.IP || !got.CreatedAt.Equal(now) {
			t.Errorf("session = %+v, want %+v", got, sess)
		}
		if in.User.DisplayName != u.DisplayName || in.User.Email != u.Email || in.User.LastLoginAt != nil {
			t.Errorf("user = %q %q %v, want %q %q and no last login", in.User.DisplayName, in.User.Email, in.User.LastLoginAt, u.DisplayName, u.Email)
		}
		if in.Settings["a.key"] != `["not", "an array"]` || len(in.Settings) != 1 {
			t.Errorf("settings = %v", in.Settings)
		}

		used, revoked := now.Add(-time.Hour), now.Add(-time.Minute)
		tok := &models.APIToken{UserID: u.ID, Name: `ci "nightly"`, Prefix: "gty_abcdefgh", Hash: "th", Scope: "write", LastUsedAt: &used, RevokedAt: &revoked}
		if err := s.CreateAPIToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		gotTok, _, err := s.APITokenSignIn(ctx, "th")
		if err != nil {
			t.Fatal(err)
		}
		if gotTok.Name != tok.Name || gotTok.ExpiresAt != nil || gotTok.LastUsedAt == nil || !gotTok.LastUsedAt.Equal(used) ||
			gotTok.RevokedAt == nil || !gotTok.RevokedAt.Equal(revoked) {
			t.Errorf("token = %+v, want %+v", gotTok, tok)
		}
	})
}

// Sign-in reads what another server on the same database committed a moment before:
// an ended session, a disabled user, a revoked token and a new policy version hold at
// once on every replica.
func TestSignInSeesTheLatestWrite(t *testing.T) {
	for _, backend := range storetest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			cfg := backend.Config(t)
			s := storetest.Open(t, cfg)
			replica := storetest.Open(t, cfg)
			signInSeesTheLatestWrite(t, s, replica)
		})
	}
}

// signInSeesTheLatestWrite writes through s and signs in through replica.
func signInSeesTheLatestWrite(t *testing.T, s, replica *store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	u, _ := fixture(t, s)
	sess := &models.Session{ID: "h", UserID: u.ID, CSRFToken: "c", CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	tok := &models.APIToken{UserID: u.ID, Name: "ci", Prefix: "gty_abcdefgh", Hash: "th", Scope: "read"}
	if err := s.CreateAPIToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	for v := range 3 {
		if err := s.PutSetting(ctx, "v", fmt.Sprint(v)); err != nil {
			t.Fatal(err)
		}
		_, in, err := replica.SessionSignIn(ctx, "h", "v")
		if err != nil || in.Settings["v"] != fmt.Sprint(v) {
			t.Fatalf("after setting v to %d: %v, %v", v, in, err)
		}
	}
	u.Disabled = true
	if err := s.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, in, err := replica.APITokenSignIn(ctx, "th"); err != nil || !in.User.Disabled {
		t.Errorf("after disabling the user: %+v, %v", in, err)
	}
	if err := s.RevokeAPIToken(ctx, tok.ID, now); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replica.APITokenSignIn(ctx, "th"); err != nil || got.RevokedAt == nil {
		t.Errorf("after revoking the token: %+v, %v", got, err)
	}
	if err := s.DeleteSession(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replica.SessionSignIn(ctx, "h"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after ending the session: %v, want ErrNotFound", err)
	}
}

func TestScanJSONArray(t *testing.T) {
	var id int64
	var name string
	var on bool
	var at time.Time
	var seen *time.Time
	var set sql.NullString
	dest := []any{&id, &name, &on, &at, &seen, &set}
	if err := store.ScanJSONArray(`[7,"a \"b\" \\ \u00e9\n",1,"2026-03-02 08:00:00.5+00:00",null,"x"]`, dest); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 2, 8, 0, 0, 5e8, time.UTC)
	if id != 7 || name != "a \"b\" \\ é\n" || !on || !at.Equal(want) || seen != nil || set != (sql.NullString{String: "x", Valid: true}) {
		t.Errorf("scanned %d %q %v %v %v %v", id, name, on, at, seen, set)
	}
	for _, row := range []string{
		``, // empty
		`7,"a",1,"2026-03-02 08:00:00",null,"x"]`,    // no [
		`[7,"a",1,"2026-03-02 08:00:00",null]`,       // a value short
		`[7,"a",1,"2026-03-02 08:00:00",null,"x",8]`, // a value more
		`["7","a",1,"2026-03-02 08:00:00",null,"x"]`, // text for an integer
		`[7,"a",1,"yesterday",null,"x"]`,             // not a time
		`[7,"a",1,"2026-03-02 08:00:00",null,"x`,     // unterminated
		`[7,"a",1,null,null,"x"]`,                    // null for a time
	} {
		if err := store.ScanJSONArray(row, dest); err == nil {
			t.Errorf("%s: scanned, want an error", row)
		}
	}
}

func TestScanJSONStrings(t *testing.T) {
	for row, want := range map[string][]string{
		`[]`:                         nil,
		`["a"]`:                      {"a"},
		`["a","",","]`:               {"a", "", ","},
		`["a\"b","\\","\n\t\u0001"]`: {`a"b`, `\`, "\n\t\x01"},
		`["é","\u00e9","😀","\ud83d\ude00","\/"]`: {"é", "é", "😀", "😀", "/"},
	} {
		got, err := store.ScanJSONStrings(row)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: scanned %q, %v; want %q", row, got, err, want)
		}
	}
	for _, row := range []string{
		``, `[`, `]`, `[,]`, `["a",]`, `["a"`, `["a""b"]`, `["a"]]`, `["a",1]`, `[null]`, `["a\"]`, `["\x"]`,
	} {
		if got, err := store.ScanJSONStrings(row); err == nil {
			t.Errorf("%s: scanned %q, want an error", row, got)
		}
	}
}

// The reader of json_group_array() rows reads what encoding/json writes of any two
// texts (which escapes more than SQLite: <, >, &, U+2028, invalid UTF-8) as
// encoding/json reads it.
func FuzzScanJSONStrings(f *testing.F) {
	f.Add("detect", "speech")
	f.Add(`a"b\c`, "\n\t\x01\u2028")
	f.Add("é😀", "\xff<&>")
	f.Fuzz(func(t *testing.T, a, b string) {
		row, err := json.Marshal([]string{a, b})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if err := json.Unmarshal(row, &want); err != nil {
			t.Fatal(err)
		}
		got, err := store.ScanJSONStrings(string(row))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: scanned %q, %v; want %q", row, got, err, want)
		}
	})
}
