package directory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// GroupMapping is a mapping as the console shows it, with names instead of ids.
type GroupMapping struct {
	ID      int64
	Group   string
	Team    string // set for a team-wide mapping
	Project string // set for a one-project mapping
	Role    string
}

// Scope says where the mapping's role holds, in words.
func (m GroupMapping) Scope() string {
	switch {
	case m.Project != "":
		return "project " + m.Project
	case m.Team != "":
		return "every project of team " + m.Team
	}
	return "platform-wide"
}

// GroupMappingInput is a new mapping: a group and a role, and for a project role the
// team (every project of it) or one project.
type GroupMappingInput struct {
	Group   string
	Team    string
	Project string
	Role    string
}

// GroupMappings returns every mapping, by group.
func (s *Service) GroupMappings(ctx context.Context) ([]GroupMapping, error) {
	ms, err := s.store.GroupMappings(ctx)
	if err != nil {
		return nil, err
	}
	teams, err := s.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	teamNames, projectNames := map[int64]string{}, map[int64]string{}
	for _, t := range teams {
		teamNames[t.ID] = t.Name
	}
	for _, p := range projects {
		projectNames[p.ID] = p.Name
	}
	out := make([]GroupMapping, len(ms))
	for i, m := range ms {
		out[i] = GroupMapping{ID: m.ID, Group: m.Group, Role: m.Role}
		if m.TeamID != nil {
			out[i].Team = teamNames[*m.TeamID]
		}
		if m.ProjectID != nil {
			out[i].Project = projectNames[*m.ProjectID]
		}
	}
	return out, nil
}

// CreateGroupMapping maps a provider group to a role. Global roles (admin, auditor) take
// no team or project; project roles need exactly one. Mappings apply at each sign-in and
// only ever add or raise roles.
func (s *Service) CreateGroupMapping(ctx context.Context, in GroupMappingInput) (*models.GroupMapping, error) {
	in.Group, in.Team, in.Project = strings.TrimSpace(in.Group), strings.TrimSpace(in.Team), strings.TrimSpace(in.Project)
	global := in.Role == models.RoleAdmin || in.Role == models.RoleAuditor
	switch {
	case in.Group == "" || len(in.Group) > 200:
		return nil, models.Invalid("group", "give the group's name as the identity provider sends it in the groups claim (1 to 200 characters)")
	case !global && !slices.Contains(models.ProjectRoles, in.Role):
		return nil, models.Invalid("role", "%q is not a role: want admin, auditor, or a project role (%s)", in.Role, strings.Join(models.ProjectRoles, ", "))
	case global && (in.Team != "" || in.Project != ""):
		return nil, models.Invalid("role", "%s is a platform-wide role: leave team and project empty", in.Role)
	case !global && (in.Team == "") == (in.Project == ""):
		return nil, models.Invalid("project", "a project role needs either a team (all its projects) or one project, not both and not neither")
	}
	m := &models.GroupMapping{Group: in.Group, Role: in.Role}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if in.Team != "" {
			t, err := tx.TeamByName(ctx, in.Team)
			if errors.Is(err, store.ErrNotFound) {
				return models.Invalid("team", "there is no team %q", in.Team)
			} else if err != nil {
				return err
			}
			m.TeamID = &t.ID
		}
		if in.Project != "" {
			p, err := tx.ProjectByName(ctx, in.Project)
			if errors.Is(err, store.ErrNotFound) {
				return models.Invalid("project", "there is no project %q", in.Project)
			} else if err != nil {
				return err
			}
			m.ProjectID = &p.ID
		}
		existing, err := tx.GroupMappingsFor(ctx, []string{in.Group})
		if err != nil {
			return err
		}
		for _, e := range existing {
			if samePtr(e.TeamID, m.TeamID) && samePtr(e.ProjectID, m.ProjectID) {
				return models.Invalid("group", "group %q already maps to %s there: remove that mapping first to change it", in.Group, e.Role)
			}
		}
		if err := tx.CreateGroupMapping(ctx, m); err != nil {
			return err
		}
		scope := GroupMapping{Team: in.Team, Project: in.Project}.Scope()
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "group_mapping.created", ObjectType: "group_mapping", ObjectID: strconv.FormatInt(m.ID, 10),
			ProjectID: m.ProjectID, Detail: map[string]string{"group": in.Group, "role": in.Role, "scope": scope}})
	})
	if err != nil {
		return nil, fmt.Errorf("map group %s: %w", in.Group, err)
	}
	return m, nil
}

// DeleteGroupMapping removes a mapping. Roles it granted stay: they are memberships now,
// which an admin removes one by one.
func (s *Service) DeleteGroupMapping(ctx context.Context, id int64) (*GroupMapping, error) {
	all, err := s.GroupMappings(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(m GroupMapping) bool { return m.ID == id })
	if i < 0 {
		return nil, &NotFoundError{Kind: "group mapping", Name: strconv.FormatInt(id, 10)}
	}
	m := all[i]
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteGroupMapping(ctx, id); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "group_mapping.deleted", ObjectType: "group_mapping", ObjectID: strconv.FormatInt(id, 10),
			Detail: map[string]string{"group": m.Group, "role": m.Role, "scope": m.Scope()}})
	})
	if err != nil {
		return nil, fmt.Errorf("remove group mapping %d: %w", id, err)
	}
	return &m, nil
}

func samePtr(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
