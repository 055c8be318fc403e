package directory

import (
	"context"
	"errors"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// activeStates are the states of jobs that hold or wait for resources.
var activeStates = []string{models.JobQueued, models.JobHeld, models.JobScheduled, models.JobRunning, models.JobPreempting}

// Disabled is what disabling a user did.
type Disabled struct {
	User          *models.User
	SessionsEnded int64
	JobsStopped   int
	// JobsLeft counts the user's jobs that keep running or waiting.
	JobsLeft int
}

// user loads the user called name, or a FieldError on user.
func (s *Service) user(ctx context.Context, tx *store.Store, name string) (*models.User, error) {
	u, err := tx.UserByUsername(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &NotFoundError{Kind: "user", Name: name}
	}
	return u, err
}

// DisableUser disables the user called name on behalf of by: their sessions end and
// their API tokens are refused at once, and they cannot sign in. Their jobs keep running
// unless stopJobs, which cancels every job of theirs that is queued or running.
func (s *Service) DisableUser(ctx context.Context, by *models.User, name string, stopJobs bool) (Disabled, error) {
	var out Disabled
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		u, err := s.user(ctx, tx, name)
		if err != nil {
			return err
		}
		if u.ID == by.ID {
			return models.Invalid("user", "you cannot disable your own account: ask another admin")
		}
		out.User = u
		if u.Disabled {
			return nil
		}
		u.Disabled = true
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if out.SessionsEnded, err = tx.DeleteSessionsOfUser(ctx, u.ID); err != nil {
			return err
		}
		if err := authz.PolicyChanged(ctx, tx); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "user.disabled", ObjectType: "user", ObjectID: u.Username,
			Detail: map[string]any{"sessions_ended": out.SessionsEnded, "stop_jobs": stopJobs}})
	})
	if err != nil {
		return out, fmt.Errorf("disable user %s: %w", name, err)
	}
	jobs, err := s.activeJobs(ctx, out.User.ID)
	if err != nil {
		return out, err
	}
	if !stopJobs || s.stop == nil {
		out.JobsLeft = len(jobs)
		return out, nil
	}
	for _, j := range jobs {
		_, err := s.stop.CancelJob(ctx, j.ID, "user:"+by.Username, "stopped because "+by.Username+" disabled its owner "+name)
		if err != nil && !errors.Is(err, store.ErrStale) {
			// A job that ended meanwhile is fine; anything else is not.
			if fresh, ferr := s.store.JobByID(ctx, j.ID); ferr != nil || !models.IsTerminal(fresh.State) {
				return out, fmt.Errorf("stop the jobs of %s: %w", name, err)
			}
			continue
		}
		if err == nil {
			out.JobsStopped++
		}
	}
	return out, nil
}

// activeJobs returns every job of the user that is queued, held or running.
func (s *Service) activeJobs(ctx context.Context, userID int64) ([]models.Job, error) {
	var out []models.Job
	f := store.JobFilter{UserID: userID, States: activeStates, Limit: 500}
	for {
		page, err := s.store.Jobs(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < f.Limit {
			return out, nil
		}
		f.BeforeID = page[len(page)-1].ID
	}
}

// EnableUser lets a disabled user sign in again; their roles and tokens are as they were.
func (s *Service) EnableUser(ctx context.Context, name string) (*models.User, error) {
	var u *models.User
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if u, err = s.user(ctx, tx, name); err != nil || !u.Disabled {
			return err
		}
		u.Disabled = false
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if err := authz.PolicyChanged(ctx, tx); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "user.enabled", ObjectType: "user", ObjectID: u.Username})
	})
	if err != nil {
		return nil, fmt.Errorf("enable user %s: %w", name, err)
	}
	return u, nil
}

// SetGlobalRoles makes the user called name an admin and an auditor, or not, on behalf
// of by; an admin cannot take the admin role from themselves (nobody might be left).
func (s *Service) SetGlobalRoles(ctx context.Context, by *models.User, name string, admin, auditor bool) (*models.User, error) {
	u, err := s.user(ctx, s.store, name)
	if err != nil {
		return nil, err
	}
	if u.ID == by.ID && u.IsAdmin && !admin {
		return nil, models.Invalid("admin", "you cannot take the admin role from yourself: ask another admin")
	}
	if err := s.authz.SetGlobalRoles(ctx, u, admin, auditor); err != nil {
		return nil, fmt.Errorf("set the global roles of %s: %w", name, err)
	}
	return u, nil
}

// SetProjectRole gives the user called name a role in the project called project, or
// changes the role they have there (through authz, audited).
func (s *Service) SetProjectRole(ctx context.Context, project, name, role string) (*models.User, *models.Project, error) {
	u, p, err := s.userAndProject(ctx, name, project)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authz.SetProjectRole(ctx, u, p, role); err != nil {
		return nil, nil, fmt.Errorf("set the role of %s in %s: %w", name, project, err)
	}
	return u, p, nil
}

// RemoveFromProject takes the role of the user called name in the project away (audited).
func (s *Service) RemoveFromProject(ctx context.Context, project, name string) (*models.User, *models.Project, error) {
	u, p, err := s.userAndProject(ctx, name, project)
	if err != nil {
		return nil, nil, err
	}
	err = s.authz.RemoveFromProject(ctx, u, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, models.Invalid("user", "%s is not a member of %s", name, project)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("remove %s from %s: %w", name, project, err)
	}
	return u, p, nil
}

func (s *Service) userAndProject(ctx context.Context, name, project string) (*models.User, *models.Project, error) {
	p, err := s.store.ProjectByName(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &NotFoundError{Kind: "project", Name: project}
	}
	if err != nil {
		return nil, nil, err
	}
	u, err := s.user(ctx, s.store, name)
	if err != nil {
		return nil, nil, err
	}
	return u, p, nil
}
