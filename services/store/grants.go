package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// Grant is one role a user holds: in a project, or globally when ProjectID is 0.
type Grant struct {
	UserID    int64
	ProjectID int64
	Role      string
}

// Grants returns every role held: project memberships, then the global admin and
// auditor roles of users that are not disabled.
func (s *Store) Grants(ctx context.Context) ([]Grant, error) {
	var out []Grant
	err := s.with(ctx).Raw(`SELECT m.user_id, m.project_id, m.role FROM memberships m
		JOIN users u ON u.id = m.user_id WHERE NOT u.disabled ORDER BY m.id`).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list role grants: %w", err)
	}
	// Only the role flags: a whole row would carry the password hash into the policy.
	var users []models.User
	if err := s.with(ctx).Select("id", "is_admin", "is_auditor").Where("(is_admin OR is_auditor) AND NOT disabled").
		Order("id").Find(&users).Error; err != nil {
		return nil, fmt.Errorf("list global roles: %w", err)
	}
	for _, u := range users {
		if u.IsAdmin {
			out = append(out, Grant{UserID: u.ID, Role: models.RoleAdmin})
		}
		if u.IsAuditor {
			out = append(out, Grant{UserID: u.ID, Role: models.RoleAuditor})
		}
	}
	return out, nil
}

// MembershipOf returns the user's membership in the project.
func (s *Store) MembershipOf(ctx context.Context, userID, projectID int64) (*models.Membership, error) {
	var m models.Membership
	if err := translate(s.with(ctx).Where("user_id = ? AND project_id = ?", userID, projectID).First(&m).Error); err != nil {
		return nil, fmt.Errorf("membership of user %d in project %d: %w", userID, projectID, err)
	}
	return &m, nil
}

// DeleteMembership removes the user from the project; removing a non-member is ErrNotFound.
func (s *Store) DeleteMembership(ctx context.Context, userID, projectID int64) error {
	res := s.with(ctx).Where("user_id = ? AND project_id = ?", userID, projectID).Delete(&models.Membership{})
	if res.Error != nil {
		return fmt.Errorf("remove user %d from project %d: %w", userID, projectID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("remove user %d from project %d: %w", userID, projectID, ErrNotFound)
	}
	return nil
}

// ProjectRole is a user's role in a project, with the project's and its team's names.
type ProjectRole struct {
	ProjectID int64
	Project   string
	Team      string
	Role      string
}

// ProjectRolesOfUser returns the user's roles in projects, by project name. The jobs
// list asks for them on every view of a member (their scope and their project filter),
// so they are read on the read pool and scanned without gorm's reflection.
func (s *Store) ProjectRolesOfUser(ctx context.Context, userID int64) ([]ProjectRole, error) {
	param := "?"
	if s.dialect == migrations.Postgres {
		param = "$1"
	}
	rows, err := s.read(ctx).Statement.ConnPool.QueryContext(ctx, `SELECT p.id, p.name, t.name, m.role
		FROM memberships m JOIN projects p ON p.id = m.project_id JOIN teams t ON t.id = p.team_id
		WHERE m.user_id = `+param+` ORDER BY p.name`, userID)
	if err != nil {
		return nil, fmt.Errorf("project roles of user %d: %w", userID, s.driverError(err))
	}
	defer rows.Close()
	var out []ProjectRole
	for rows.Next() {
		var r ProjectRole
		if err := rows.Scan(&r.ProjectID, &r.Project, &r.Team, &r.Role); err != nil {
			return nil, fmt.Errorf("project roles of user %d: %w", userID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("project roles of user %d: %w", userID, s.driverError(err))
	}
	return out, nil
}

// Member is a user's role in one project.
type Member struct {
	UserID      int64
	Username    string
	DisplayName string
	Role        string
}

// MembersOfProject returns the project's members, by username.
func (s *Store) MembersOfProject(ctx context.Context, projectID int64) ([]Member, error) {
	var out []Member
	err := s.with(ctx).Raw(`SELECT u.id AS user_id, u.username, u.display_name, m.role
		FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.project_id = ? ORDER BY u.username`, projectID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("members of project %d: %w", projectID, err)
	}
	return out, nil
}

// MemberCounts returns how many members each project has, by project id.
func (s *Store) MemberCounts(ctx context.Context) (map[int64]int, error) {
	var rows []struct {
		ProjectID int64
		N         int
	}
	if err := s.with(ctx).Model(&models.Membership{}).Select("project_id, COUNT(*) AS n").Group("project_id").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count members: %w", err)
	}
	out := make(map[int64]int, len(rows))
	for _, r := range rows {
		out[r.ProjectID] = r.N
	}
	return out, nil
}

// ProjectRolesOfUsers returns the project roles of each of the users, by project name.
func (s *Store) ProjectRolesOfUsers(ctx context.Context, userIDs []int64) (map[int64][]ProjectRole, error) {
	out := map[int64][]ProjectRole{}
	if len(userIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		UserID int64
		ProjectRole
	}
	err := s.with(ctx).Raw(`SELECT m.user_id, p.id AS project_id, p.name AS project, t.name AS team, m.role
		FROM memberships m JOIN projects p ON p.id = m.project_id JOIN teams t ON t.id = p.team_id
		WHERE m.user_id IN ? ORDER BY p.name`, userIDs).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("project roles of %d users: %w", len(userIDs), err)
	}
	for _, r := range rows {
		out[r.UserID] = append(out[r.UserID], r.ProjectRole)
	}
	return out, nil
}
