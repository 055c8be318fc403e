package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// SavePriorityClass inserts c, or saves every field of it when it has an id; a taken
// name is ErrConflict.
func (s *Store) SavePriorityClass(ctx context.Context, c *models.PriorityClass) error {
	if err := translate(s.with(ctx).Save(c).Error); err != nil {
		return fmt.Errorf("save priority class %s: %w", c.Name, err)
	}
	return nil
}

// DeletePriorityClass removes the class called name; a missing one is ErrNotFound.
func (s *Store) DeletePriorityClass(ctx context.Context, name string) error {
	res := s.with(ctx).Where("name = ?", name).Delete(&models.PriorityClass{})
	if res.Error != nil {
		return fmt.Errorf("delete priority class %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete priority class %s: %w", name, ErrNotFound)
	}
	return nil
}

// CountJobsOfClass counts the jobs of a priority class that have not ended.
func (s *Store) CountJobsOfClass(ctx context.Context, class string) (int64, error) {
	var n int64
	err := s.with(ctx).Model(&models.Job{}).Where("priority_class = ? AND state NOT IN ?", class,
		[]string{models.JobSucceeded, models.JobFailed, models.JobCancelled}).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count jobs of class %s: %w", class, err)
	}
	return n, nil
}
