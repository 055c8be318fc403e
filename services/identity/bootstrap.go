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

// What a first start creates.
const (
	AdminUser      = "admin"
	DefaultTeam    = "default"
	DefaultProject = "default"
	PlainImage     = "plain-command" // the built-in entry for jobs that run a command without a container
)

// Bootstrap readies an empty installation: the local admin with a random password, team
// "default" with project "default" led by the admin, and the built-in plain-command image
// as that project's default. It returns the password, which is stored only as a bcrypt hash
// and must be shown once; "" when the database already has users.
func (s *Service) Bootstrap(ctx context.Context) (string, error) {
	if n, err := s.store.CountUsers(ctx); err != nil || n > 0 {
		return "", err
	}
	password := randomPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.opts.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("hash the admin password: %w", err)
	}
	ctx = audit.WithActor(ctx, audit.System())
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		admin := &models.User{Username: AdminUser, DisplayName: "Administrator (local)", PasswordHash: string(hash)}
		if err := tx.CreateUser(ctx, admin); err != nil {
			return err
		}
		az := s.authz.In(tx)
		if err := az.SetGlobalRoles(ctx, admin, true, false); err != nil {
			return err
		}
		img, err := plainImage(ctx, tx)
		if err != nil {
			return err
		}
		team := &models.Team{Name: DefaultTeam, DisplayName: "Default team"}
		if err := tx.CreateTeam(ctx, team); err != nil {
			return err
		}
		project := &models.Project{TeamID: team.ID, Name: DefaultProject, DisplayName: "Default project", DefaultImageID: &img.ID}
		if err := tx.CreateProject(ctx, project); err != nil {
			return err
		}
		if err := az.SetProjectRole(ctx, admin, project, models.RoleTeamLead); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "system.bootstrapped", ObjectType: "user", ObjectID: AdminUser,
			Detail: map[string]string{"admin": AdminUser, "team": DefaultTeam, "project": DefaultProject, "image": img.Name}})
	})
	if errors.Is(err, store.ErrConflict) {
		// Another replica bootstrapped the same empty database a moment ago.
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bootstrap the first admin: %w", err)
	}
	return password, nil
}

// plainImage returns the built-in image entry, creating it when missing.
func plainImage(ctx context.Context, tx *store.Store) (*models.Image, error) {
	img, err := tx.ImageByName(ctx, PlainImage)
	if !errors.Is(err, store.ErrNotFound) {
		return img, err
	}
	img = &models.Image{Name: PlainImage, Status: models.ImageCertified, Builtin: true, Framework: "other",
		Description: "Runs the job's command directly on the node, with CUDA_VISIBLE_DEVICES set to its GPUs; no container."}
	return img, tx.CreateImage(ctx, img)
}
