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
