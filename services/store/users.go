package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// CreateUser inserts u and sets its ID; a taken username is ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u *models.User) error {
	if err := translate(s.with(ctx).Create(u).Error); err != nil {
		return fmt.Errorf("create user %s: %w", u.Username, err)
	}
	return nil
}

// UserByID returns the user with id.
func (s *Store) UserByID(ctx context.Context, id int64) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).First(&u, id).Error); err != nil {
		return nil, fmt.Errorf("user %d: %w", id, err)
	}
	return &u, nil
}

// UserByUsername returns the user named username.
func (s *Store) UserByUsername(ctx context.Context, username string) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Where("username = ?", username).First(&u).Error); err != nil {
		return nil, fmt.Errorf("user %s: %w", username, err)
	}
	return &u, nil
}

// Users returns every user ordered by username.
func (s *Store) Users(ctx context.Context) ([]models.User, error) {
	var out []models.User
	if err := s.with(ctx).Order("username").Find(&out).Error; err != nil {
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

// UpdateUser saves every field of u.
func (s *Store) UpdateUser(ctx context.Context, u *models.User) error {
	res := s.with(ctx).Save(u)
	if err := translate(res.Error); err != nil {
		return fmt.Errorf("update user %s: %w", u.Username, err)
	}
	return nil
}

// UserByIdentity returns the user that signs in through issuer as subject.
func (s *Store) UserByIdentity(ctx context.Context, issuer, subject string) (*models.User, error) {
	var u models.User
	if err := translate(s.with(ctx).Where("issuer = ? AND subject = ?", issuer, subject).First(&u).Error); err != nil {
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
