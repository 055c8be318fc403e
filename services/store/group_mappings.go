package store

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// CreateGroupMapping inserts a mapping from an identity-provider group to a role.
func (s *Store) CreateGroupMapping(ctx context.Context, m *models.GroupMapping) error {
	if err := translate(s.with(ctx).Create(m).Error); err != nil {
		return fmt.Errorf("create group mapping %s: %w", m.Group, err)
	}
	return nil
}

// GroupMappingsFor returns the mappings of any of groups.
func (s *Store) GroupMappingsFor(ctx context.Context, groups []string) ([]models.GroupMapping, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	var out []models.GroupMapping
	if err := s.with(ctx).Where("group_name IN ?", groups).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("group mappings: %w", err)
	}
	return out, nil
}

// GroupMappings returns every mapping, by group name.
func (s *Store) GroupMappings(ctx context.Context) ([]models.GroupMapping, error) {
	var out []models.GroupMapping
	if err := s.with(ctx).Order("group_name, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list group mappings: %w", err)
	}
	return out, nil
}

// GroupMappingByID returns the mapping with id.
func (s *Store) GroupMappingByID(ctx context.Context, id int64) (*models.GroupMapping, error) {
	var m models.GroupMapping
	if err := translate(s.with(ctx).First(&m, id).Error); err != nil {
		return nil, fmt.Errorf("group mapping %d: %w", id, err)
	}
	return &m, nil
}

// DeleteGroupMapping removes the mapping with id; a missing one is ErrNotFound.
func (s *Store) DeleteGroupMapping(ctx context.Context, id int64) error {
	res := s.with(ctx).Delete(&models.GroupMapping{}, id)
	if res.Error != nil {
		return fmt.Errorf("delete group mapping %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete group mapping %d: %w", id, ErrNotFound)
	}
	return nil
}
