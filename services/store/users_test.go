package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A user that a request signed in as, changed and saved back keeps their password:
// sign-in does not read the hash, and UpdateUser must not write the empty one it has.
func TestUserSavedFromASignInKeepsThePasswordHash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const hash = "$2a$10$abcdefghijklmnopqrstuv0123456789ABCDEFGHIJKLMNOPQRSTU"
		u := &models.User{Username: "root", DisplayName: "Root", PasswordHash: hash}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		created, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		sess := &models.Session{ID: "h", UserID: u.ID, CSRFToken: "c", CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		_, in, err := s.SessionSignIn(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		if in.User.PasswordHash != "" {
			t.Errorf("sign-in read the password hash %q; nothing on a signed-in request uses it", in.User.PasswordHash)
		}
		signedIn := in.User
		signedIn.DisplayName, signedIn.IsAuditor, signedIn.LastLoginAt = "Root (local)", true, &now
		if err := s.UpdateUser(ctx, &signedIn); err != nil {
			t.Fatal(err)
		}
		got, err := s.UserByUsernameWithPassword(ctx, "root")
		if err != nil {
			t.Fatal(err)
		}
		if got.PasswordHash != hash {
			t.Errorf("password hash after saving the signed-in user = %q, want %q", got.PasswordHash, hash)
		}
		if got.DisplayName != "Root (local)" || !got.IsAuditor || got.LastLoginAt == nil || !got.LastLoginAt.Equal(now) {
			t.Errorf("saved user = %+v, want the changes written", got)
		}

		// A user put together by hand, hash unset, does not erase it either.
		if err := s.UpdateUser(ctx, &models.User{ID: u.ID, Username: "root", DisplayName: "Root"}); err != nil {
			t.Fatal(err)
		}
		got, err = s.UserByUsernameWithPassword(ctx, "root")
		if err != nil || got.PasswordHash != hash || got.DisplayName != "Root" || got.IsAuditor || got.LastLoginAt != nil {
			t.Errorf("after saving a user without a hash: %+v, %v; want the hash kept and the rest written", got, err)
		}
		if !got.CreatedAt.Equal(created.CreatedAt) {
			t.Errorf("created_at = %v, want %v: a save does not move it", got.CreatedAt, created.CreatedAt)
		}

		if err := s.SetUserPassword(ctx, u.ID, "new-hash"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.UserByUsernameWithPassword(ctx, "root"); err != nil || got.PasswordHash != "new-hash" || got.DisplayName != "Root" {
			t.Errorf("after SetUserPassword: %+v, %v", got, err)
		}
	})
}

// Only UserByUsernameWithPassword returns the hash: every other user the store hands
// out may reach a page or a log line.
func TestUsersReadWithoutThePasswordHash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := &models.User{Username: "root", Issuer: "https://idp.example", Subject: "s-1", PasswordHash: "secret-hash"}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		byID, err := s.UserByID(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		byName, err := s.UserByUsername(ctx, "root")
		if err != nil {
			t.Fatal(err)
		}
		byIdentity, err := s.UserByIdentity(ctx, "https://idp.example", "s-1")
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.Users(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("Users = %+v, %v", all, err)
		}
		for name, got := range map[string]*models.User{"UserByID": byID, "UserByUsername": byName, "UserByIdentity": byIdentity, "Users": &all[0]} {
			if got.PasswordHash != "" || got.Username != "root" || got.Subject != "s-1" {
				t.Errorf("%s = %+v, want root without the hash", name, got)
			}
		}
	})
}

// UpdateUser and SetUserPassword change a user that exists; gorm's Save would insert
// a deleted one again.
func TestUserWritesOfAMissingUserAreNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.UpdateUser(ctx, &models.User{ID: 4242, Username: "ghost"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateUser of a missing user: %v, want ErrNotFound", err)
		}
		if err := s.SetUserPassword(ctx, 4242, "h"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetUserPassword of a missing user: %v, want ErrNotFound", err)
		}
		if n, err := s.CountUsers(ctx); err != nil || n != 0 {
			t.Errorf("users = %d, %v; want none created", n, err)
		}
	})
}

// Grants needs only the users' role flags: building the policy reads no password hash
// (only UserByUsernameWithPassword does, which the watch must see).
func TestGrantsReadNoPasswordHash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		root := &models.User{Username: "root", PasswordHash: "root-hash", IsAdmin: true, IsAuditor: true}
		ada := &models.User{Username: "ada", PasswordHash: "ada-hash"}
		gone := &models.User{Username: "gone", PasswordHash: "gone-hash", IsAdmin: true, Disabled: true}
		for _, u := range []*models.User{root, ada, gone} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		team := &models.Team{Name: "ml"}
		if err := s.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		project := &models.Project{Name: "vision", TeamID: team.ID}
		if err := s.CreateProject(ctx, project); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMembership(ctx, ada.ID, project.ID, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		reads, err := s.WatchPasswordHashReads()
		if err != nil {
			t.Fatal(err)
		}

		grants, err := s.Grants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Grant{
			{UserID: ada.ID, ProjectID: project.ID, Role: models.RoleMember},
			{UserID: root.ID, Role: models.RoleAdmin},
			{UserID: root.ID, Role: models.RoleAuditor},
		}
		if !slices.Equal(grants, want) {
			t.Errorf("Grants = %+v, want %+v", grants, want)
		}
		if n := reads.Count(); n != 0 {
			t.Errorf("Grants read %d users with their password hash; it needs only their roles", n)
		}

		before := reads.Count()
		if _, err := s.UserByUsernameWithPassword(ctx, "ada"); err != nil {
			t.Fatal(err)
		}
		if n := reads.Count() - before; n != 1 {
			t.Errorf("UserByUsernameWithPassword read %d users with their hash, want 1: the watch misses reads", n)
		}
	})
}
