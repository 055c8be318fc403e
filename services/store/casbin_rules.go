package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// casbinValues is how many values a casbin_rule line holds (v0 … v5).
const casbinValues = 6

// CasbinPolicyLines returns the lines of the casbin_rule table (migration 0001, in the
// layout of casbin/gorm-adapter), in the order they were added, each as its ptype and
// its values up to the last one that is not empty.
func (s *Store) CasbinPolicyLines(ctx context.Context) ([][]string, error) {
	var rows []models.CasbinRule
	if err := s.with(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read casbin_rule: %w", err)
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		line := []string{r.Ptype, r.V0, r.V1, r.V2, r.V3, r.V4, r.V5}
		for len(line) > 1 && line[len(line)-1] == "" {
			line = line[:len(line)-1]
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// AddCasbinPolicyLine adds a line to casbin_rule; a line that is there already is left as it is.
func (s *Store) AddCasbinPolicyLine(ctx context.Context, ptype string, values []string) error {
	if len(values) > casbinValues {
		return fmt.Errorf("add casbin_rule line %s %v: at most %d values", ptype, values, casbinValues)
	}
	v := make([]string, casbinValues)
	copy(v, values)
	row := models.CasbinRule{Ptype: ptype, V0: v[0], V1: v[1], V2: v[2], V3: v[3], V4: v[4], V5: v[5]}
	if err := s.with(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("add casbin_rule line %s %v: %w", ptype, values, err)
	}
	return nil
}

// DeleteCasbinPolicyLines deletes the lines of ptype whose values from position first
// on are values, an empty value matching any.
func (s *Store) DeleteCasbinPolicyLines(ctx context.Context, ptype string, first int, values ...string) error {
	if first < 0 || first+len(values) > casbinValues {
		return fmt.Errorf("delete casbin_rule lines %s: values from position %d, %d of them: want positions 0 to %d", ptype, first, len(values), casbinValues-1)
	}
	q := s.with(ctx).Where("ptype = ?", ptype)
	filtered := false
	for i, v := range values {
		if v != "" {
			q = q.Where("v"+strconv.Itoa(first+i)+" = ?", v)
			filtered = true
		}
	}
	if !filtered {
		return errors.New("delete casbin_rule lines " + ptype + ": every value is empty; name at least one")
	}
	if err := q.Delete(&models.CasbinRule{}).Error; err != nil {
		return fmt.Errorf("delete casbin_rule lines %s %v: %w", ptype, values, err)
	}
	return nil
}
