package store_test

import (
	"context"
	"errors"
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
