package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// CreateJobTemplate inserts t; a name its project already has is ErrConflict.
func (s *Store) CreateJobTemplate(ctx context.Context, t *models.JobTemplate) error {
	if err := translate(s.with(ctx).Create(t).Error); err != nil {
		return fmt.Errorf("create job template %s: %w", t.Name, err)
	}
	return nil
}

// JobTemplateByName returns the template of the project called name.
func (s *Store) JobTemplateByName(ctx context.Context, projectID int64, name string) (*models.JobTemplate, error) {
	var t models.JobTemplate
	if err := translate(s.with(ctx).Where("project_id = ? AND name = ?", projectID, name).First(&t).Error); err != nil {
		return nil, fmt.Errorf("job template %s of project %d: %w", name, projectID, err)
	}
	return &t, nil
}

// JobTemplates returns the templates of a project, in no particular order.
func (s *Store) JobTemplates(ctx context.Context, projectID int64) ([]models.JobTemplate, error) {
	var out []models.JobTemplate
	if err := s.with(ctx).Where("project_id = ?", projectID).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list job templates of project %d: %w", projectID, err)
	}
	return out, nil
}

// RenameJobTemplate renames the template with id; a missing one is ErrNotFound, a
// name its project already has ErrConflict.
func (s *Store) RenameJobTemplate(ctx context.Context, id int64, name string) error {
	res := s.with(ctx).Model(&models.JobTemplate{}).Where("id = ?", id).Update("name", name)
	if err := translate(res.Error); err != nil {
		return fmt.Errorf("rename job template %d to %s: %w", id, name, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("rename job template %d: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteJobTemplate removes the template with id; a missing one is ErrNotFound.
func (s *Store) DeleteJobTemplate(ctx context.Context, id int64) error {
	res := s.with(ctx).Delete(&models.JobTemplate{}, id)
	if res.Error != nil {
		return fmt.Errorf("delete job template %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete job template %d: %w", id, ErrNotFound)
	}
	return nil
}
