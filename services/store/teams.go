package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// CreateTeam inserts t; a taken name is ErrConflict.
func (s *Store) CreateTeam(ctx context.Context, t *models.Team) error {
	if err := translate(s.with(ctx).Create(t).Error); err != nil {
		return fmt.Errorf("create team %s: %w", t.Name, err)
	}
	return nil
}

// TeamByName returns the team called name.
func (s *Store) TeamByName(ctx context.Context, name string) (*models.Team, error) {
	var t models.Team
	if err := translate(s.with(ctx).Where("name = ?", name).First(&t).Error); err != nil {
		return nil, fmt.Errorf("team %s: %w", name, err)
	}
	return &t, nil
}

// Teams returns every team ordered by name.
func (s *Store) Teams(ctx context.Context) ([]models.Team, error) {
	var out []models.Team
	if err := s.with(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	return out, nil
}

// CreateProject inserts p; a taken name is ErrConflict, an unknown team ErrConflict.
func (s *Store) CreateProject(ctx context.Context, p *models.Project) error {
	if err := translate(s.with(ctx).Create(p).Error); err != nil {
		return fmt.Errorf("create project %s: %w", p.Name, err)
	}
	return nil
}

// ProjectByName returns the project called name. The gate of every project route and
// a jobs list filtered by project ask for it, so it reads through readRows.
func (s *Store) ProjectByName(ctx context.Context, name string) (*models.Project, error) {
	var p models.Project
	found := false
	q := s.rowSQL("project by name", projectColumns, "projects", "name")
	err := s.readRows(ctx, s.rowRead(q, []any{name}, projectFields(&p), &found))
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", name, err)
	}
	return &p, nil
}

// ProjectByID returns the project with id.
func (s *Store) ProjectByID(ctx context.Context, id int64) (*models.Project, error) {
	var p models.Project
	if err := translate(s.with(ctx).First(&p, id).Error); err != nil {
		return nil, fmt.Errorf("project %d: %w", id, err)
	}
	return &p, nil
}

// Projects returns every project ordered by name.
func (s *Store) Projects(ctx context.Context) ([]models.Project, error) {
	var out []models.Project
	if err := s.with(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return out, nil
}

// SetMembership gives user a role in project, replacing any role they had there.
func (s *Store) SetMembership(ctx context.Context, userID, projectID int64, role string) error {
	return s.InTx(ctx, func(tx *Store) error {
		var m models.Membership
		err := translate(tx.with(ctx).Where("user_id = ? AND project_id = ?", userID, projectID).First(&m).Error)
		switch {
		case err == nil:
			m.Role = role
			err = tx.with(ctx).Save(&m).Error
		case isNotFound(err):
			err = tx.with(ctx).Create(&models.Membership{UserID: userID, ProjectID: projectID, Role: role}).Error
		}
		if err := translate(err); err != nil {
			return fmt.Errorf("set membership of user %d in project %d: %w", userID, projectID, err)
		}
		return nil
	})
}

// MembershipsOfUser returns the user's memberships.
func (s *Store) MembershipsOfUser(ctx context.Context, userID int64) ([]models.Membership, error) {
	var out []models.Membership
	if err := s.with(ctx).Where("user_id = ?", userID).Order("project_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("memberships of user %d: %w", userID, err)
	}
	return out, nil
}

// ProjectNamesByID returns the names of the given projects, for lists that show them;
// on the read pool, as ProjectNames.
func (s *Store) ProjectNamesByID(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID   int64
		Name string
	}
	if err := s.read(ctx).Model(&models.Project{}).Select("id, name").Where("id IN ?", ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("project names: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, nil
}

// TeamByID returns the team with id.
func (s *Store) TeamByID(ctx context.Context, id int64) (*models.Team, error) {
	var t models.Team
	if err := translate(s.with(ctx).First(&t, id).Error); err != nil {
		return nil, fmt.Errorf("team %d: %w", id, err)
	}
	return &t, nil
}

// UpdateTeam saves every field of t.
func (s *Store) UpdateTeam(ctx context.Context, t *models.Team) error {
	if err := translate(s.with(ctx).Save(t).Error); err != nil {
		return fmt.Errorf("update team %s: %w", t.Name, err)
	}
	return nil
}

// UpdateProject saves every field of p.
func (s *Store) UpdateProject(ctx context.Context, p *models.Project) error {
	if err := translate(s.with(ctx).Save(p).Error); err != nil {
		return fmt.Errorf("update project %s: %w", p.Name, err)
	}
	return nil
}

// ProjectsOfTeam returns the team's projects ordered by name.
func (s *Store) ProjectsOfTeam(ctx context.Context, teamID int64) ([]models.Project, error) {
	var out []models.Project
	if err := s.with(ctx).Where("team_id = ?", teamID).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("projects of team %d: %w", teamID, err)
	}
	return out, nil
}

// ProjectNames returns the names of every project, sorted. The jobs page asks for them
// on every view, so they are read by readRows: on the read pool (on SQLite, not queued
// on the one writer connection) and without gorm, whose Pluck spends more on
// reflection than the query costs.
func (s *Store) ProjectNames(ctx context.Context) ([]string, error) {
	var out projectNames
	if err := s.readRows(ctx, s.projectNamesRead(&out)); err != nil {
		return nil, fmt.Errorf("project names: %w", err)
	}
	return out.sorted, nil
}

// projectNames are every project's name, sorted, and on PostgreSQL by id.
type projectNames struct {
	sorted []string
	// byID holds each project, in the order of its id once read.
	byID []projectName
}

type projectName struct {
	id   int64
	name string
}

// name puts in each job's project name, by its ProjectID.
func (p *projectNames) name(jobs []models.JobBrief) error {
	for i := range jobs {
		j := &jobs[i]
		at, ok := slices.BinarySearchFunc(p.byID, j.ProjectID, func(n projectName, id int64) int { return cmp.Compare(n.id, id) })
		if !ok {
			return fmt.Errorf("job %d: no project %d among the names read", j.ID, j.ProjectID)
		}
		j.ProjectName = p.byID[at].name
	}
	return nil
}

// projectNamesRead reads every project's name, sorted, into out, and on PostgreSQL
// their ids too (see briefJobs). On SQLite they come back as one json_group_array()
// row: the driver reads each row through several calls and allocations, and 21 rows
// of one name cost more than one row of 21. They are sorted here, in byte order as
// SQLite's BINARY collation has them: ORDER BY within the aggregate would have SQLite
// sort them in a temporary b-tree rather than walk the name index (twice the query's
// CPU), and the order of rows that an aggregate's subquery sorts is the planner's,
// not a promise. PostgreSQL's are sorted in the same order, not by its collation.
func (s *Store) projectNamesRead(out *projectNames) read {
	if s.dialect == migrations.SQLite {
		return read{query: "SELECT json_group_array(name) FROM projects", scan: func(rows rowScanner) error {
			var row string
			if !rows.Next() {
				return errors.New("no row of project names")
			}
			if err := rows.Scan(&row); err != nil {
				return err
			}
			names, err := scanJSONStrings(row)
			if err != nil {
				return err
			}
			slices.Sort(names)
			out.sorted = names
			return nil
		}}
	}
	return read{query: "SELECT id, name FROM projects", scan: func(rows rowScanner) error {
		var n projectName
		dest := []any{&n.id, &n.name}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			out.byID = append(out.byID, n)
		}
		out.sorted = make([]string, len(out.byID))
		for i, n := range out.byID {
			out.sorted[i] = n.name
		}
		slices.Sort(out.sorted)
		slices.SortFunc(out.byID, func(a, b projectName) int { return cmp.Compare(a.id, b.id) })
		return nil
	}}
}
