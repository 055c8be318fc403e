package directory

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// Stopper cancels a job: dispatch implements it.
type Stopper interface {
	CancelJob(ctx context.Context, jobID int64, actor, message string) (*models.Job, error)
}

// Service changes teams, projects, people and group mappings.
type Service struct {
	store *store.Store
	audit *audit.Log
	authz *authz.Authorizer
	stop  Stopper
	now   func() time.Time
}

// New returns the directory over st, auditing to log, granting through az and stopping
// jobs of disabled people through stop (nil: disabling never stops jobs).
func New(st *store.Store, log *audit.Log, az *authz.Authorizer, stop Stopper, now func() time.Time) *Service {
	return &Service{store: st, audit: log, authz: az, stop: stop, now: now}
}

// NotFoundError is an object named in a request that does not exist.
type NotFoundError struct {
	Kind, Name string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("there is no %s %q", e.Kind, e.Name) }

// nameRE is what team and project names look like: they appear in URLs, job specs and the CLI.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

func checkName(kind, name, display string) error {
	if !nameRE.MatchString(name) {
		return models.Invalid("name", "%q is not a %s name: use 1-63 lower-case letters, digits and '-', starting with a letter or digit", name, kind)
	}
	if utf8.RuneCountInString(display) > 100 {
		return models.Invalid("display_name", "must be at most 100 characters")
	}
	return nil
}

// CreateTeam adds a team; a taken name is a FieldError on name.
func (s *Service) CreateTeam(ctx context.Context, name, display string) (*models.Team, error) {
	name, display = strings.TrimSpace(name), strings.TrimSpace(display)
	if err := checkName("team", name, display); err != nil {
		return nil, err
	}
	t := &models.Team{Name: name, DisplayName: display}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.TeamByName(ctx, name); err == nil {
			return models.Invalid("name", "a team called %q already exists: pick another name", name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.CreateTeam(ctx, t); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "team.created", ObjectType: "team", ObjectID: name,
			Detail: map[string]string{"display_name": display}})
	})
	if err != nil {
		return nil, fmt.Errorf("create team %s: %w", name, err)
	}
	return t, nil
}

// SetTeamArchived archives a team, and with it every project of it that is not archived
// yet, or restores the team alone. Jobs that run keep running; archived projects take no
// new jobs.
func (s *Service) SetTeamArchived(ctx context.Context, name string, archived bool) (*models.Team, error) {
	var t *models.Team
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if t, err = tx.TeamByName(ctx, name); errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{Kind: "team", Name: name}
		} else if err != nil {
			return err
		}
		if t.Archived == archived {
			return nil
		}
		t.Archived = archived
		if err := tx.UpdateTeam(ctx, t); err != nil {
			return err
		}
		action, detail := "team.restored", map[string]any{}
		if archived {
			action = "team.archived"
			projects, err := tx.ProjectsOfTeam(ctx, t.ID)
			if err != nil {
				return err
			}
			var names []string
			for i := range projects {
				p := &projects[i]
				if p.Archived {
					continue
				}
				p.Archived = true
				if err := tx.UpdateProject(ctx, p); err != nil {
					return err
				}
				names = append(names, p.Name)
			}
			detail["projects_archived"] = names
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "team", ObjectID: name, Detail: detail})
	})
	if err != nil {
		return nil, fmt.Errorf("archive team %s: %w", name, err)
	}
	return t, nil
}

// CreateProject adds a project to a team that is not archived; a taken name is a
// FieldError on name.
func (s *Service) CreateProject(ctx context.Context, team, name, display string) (*models.Project, error) {
	name, display = strings.TrimSpace(name), strings.TrimSpace(display)
	if err := checkName("project", name, display); err != nil {
		return nil, err
	}
	p := &models.Project{Name: name, DisplayName: display}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		t, err := tx.TeamByName(ctx, team)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return models.Invalid("team", "there is no team %q: create it first", team)
		case err != nil:
			return err
		case t.Archived:
			return models.Invalid("team", "team %q is archived: restore it before adding projects", team)
		}
		if _, err := tx.ProjectByName(ctx, name); err == nil {
			return models.Invalid("name", "a project called %q already exists: project names are unique across teams, pick another", name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p.TeamID = t.ID
		if err := tx.CreateProject(ctx, p); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "project.created", ObjectType: "project", ObjectID: name, ProjectID: &p.ID,
			Detail: map[string]string{"team": team, "display_name": display}})
	})
	if err != nil {
		return nil, fmt.Errorf("create project %s: %w", name, err)
	}
	return p, nil
}

// SetProjectArchived archives or restores a project. Archived projects take no new jobs;
// jobs that run keep running. A project of an archived team cannot be restored.
func (s *Service) SetProjectArchived(ctx context.Context, name string, archived bool) (*models.Project, error) {
	var p *models.Project
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = tx.ProjectByName(ctx, name); errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{Kind: "project", Name: name}
		} else if err != nil {
			return err
		}
		if p.Archived == archived {
			return nil
		}
		if !archived {
			t, err := tx.TeamByID(ctx, p.TeamID)
			if err != nil {
				return err
			}
			if t.Archived {
				return models.Invalid("project", "project %q belongs to the archived team %q: restore the team first", name, t.Name)
			}
		}
		p.Archived = archived
		if err := tx.UpdateProject(ctx, p); err != nil {
			return err
		}
		action := "project.restored"
		if archived {
			action = "project.archived"
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "project", ObjectID: name, ProjectID: &p.ID})
	})
	if err != nil {
		return nil, fmt.Errorf("archive project %s: %w", name, err)
	}
	return p, nil
}
