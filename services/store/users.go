package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// CreateUser inserts u and sets its ID; a taken username is ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u *models.User) error {
	if err := translate(s.with(ctx).Create(u).Error); err != nil {
		return fmt.Errorf("create user %s: %w", u.Username, err)
	}
	return nil
}

// passwordHash is the column that only a password login reads and only SetUserPassword
// writes: the users this store returns leave PasswordHash empty, so no page, log line
// or saved copy of a user carries it.
const passwordHash = "password_hash"

// UserByID returns the user with id.
func (s *Store) UserByID(ctx context.Context, id int64) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Omit(passwordHash).First(&u, id).Error); err != nil {
		return nil, fmt.Errorf("user %d: %w", id, err)
	}
	return &u, nil
}

// UserByUsername returns the user named username.
func (s *Store) UserByUsername(ctx context.Context, username string) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Omit(passwordHash).Where("username = ?", username).First(&u).Error); err != nil {
		return nil, fmt.Errorf("user %s: %w", username, err)
	}
	return &u, nil
}

// UserByUsernameWithPassword returns the user named username with their password hash
// (empty for a user who signs in through single sign-on), for a password login.
func (s *Store) UserByUsernameWithPassword(ctx context.Context, username string) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Where("username = ?", username).First(&u).Error); err != nil {
		return nil, fmt.Errorf("user %s: %w", username, err)
	}
	return &u, nil
}

// Users returns every user ordered by username.
func (s *Store) Users(ctx context.Context) ([]models.User, error) {
	var out []models.User
	if err := s.with(ctx).Omit(passwordHash).Order("username").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}

// CountUsers returns how many users exist.
func (s *Store) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	if err := s.with(ctx).Model(&models.User{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// UpdateUser writes every field of u but its password hash (SetUserPassword writes
// that) and its creation time: a user read from this store or a sign-in has no hash, and
// saving it back must not erase the one in the database. A user that no longer exists
// is ErrNotFound (gorm's Save would insert it again).
func (s *Store) UpdateUser(ctx context.Context, u *models.User) error {
	res := s.with(ctx).Model(u).Select("*").Omit("id", passwordHash, "created_at").Updates(u)
	err := translate(res.Error)
	if err == nil && res.RowsAffected == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("update user %s: %w", u.Username, err)
	}
	return nil
}

// SetUserPassword replaces the password hash of the user with id.
func (s *Store) SetUserPassword(ctx context.Context, id int64, hash string) error {
	res := s.with(ctx).Model(&models.User{}).Where("id = ?", id).
		Updates(map[string]any{passwordHash: hash, "updated_at": time.Now().UTC()})
	err := translate(res.Error)
	if err == nil && res.RowsAffected == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("set the password of user %d: %w", id, err)
	}
	return nil
}

// UserByIdentity returns the user that signs in through issuer as subject.
func (s *Store) UserByIdentity(ctx context.Context, issuer, subject string) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Omit(passwordHash).Where("issuer = ? AND subject = ?", issuer, subject).First(&u).Error); err != nil {
		return nil, fmt.Errorf("user %s at %s: %w", subject, issuer, err)
	}
	return &u, nil
}

// UsernamesByID returns the usernames of the given users, for lists that show authors.
func (s *Store) UsernamesByID(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID       int64
		Username string
	}
	if err := s.with(ctx).Model(&models.User{}).Select("id, username").Where("id IN ?", ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("usernames: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Username
	}
	return out, nil
}
