package identity

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// ResetPassword gives a local user a new random password, ends all their sessions and
// returns the password, which is shown once.
func (s *Service) ResetPassword(ctx context.Context, username string) (string, error) {
	u, err := s.store.UserByUsername(ctx, username)
	if errors.Is(err, store.ErrNotFound) {
		return "", models.Invalid("user", "no user is called %q", username)
	}
	if err != nil {
		return "", err
	}
	if u.Issuer != "" {
		return "", models.Invalid("user", "%s signs in through single sign-on (%s) and has no password to reset", username, u.Issuer)
	}
	password := randomPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.opts.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("hash the new password: %w", err)
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.SetUserPassword(ctx, u.ID, string(hash)); err != nil {
			return err
		}
		ended, err := tx.DeleteSessionsOfUser(ctx, u.ID)
		if err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "user.password_reset", ObjectType: "user", ObjectID: u.Username,
			Detail: map[string]int64{"sessions_ended": ended}})
	})
	if err != nil {
		return "", fmt.Errorf("reset the password of %s: %w", username, err)
	}
	return password, nil
}
