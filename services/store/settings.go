package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// Setting returns the value of key; ok is false when it was never set.
func (s *Store) Setting(ctx context.Context, key string) (value string, ok bool, err error) {
	var row models.Setting
	err = translate(s.with(ctx).Where("key = ?", key).First(&row).Error)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return row.Value, true, nil
}

// PutSetting sets key to value.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	row := models.Setting{Key: key, Value: value, UpdatedAt: time.Now().UTC()}
	err := s.with(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "key"}}, DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"})}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("put setting %s: %w", key, err)
	}
	return nil
}

// SettingOrInit returns the value of key, first setting it to init when it was never set;
// of replicas that race, the first writer wins and all read its value.
func (s *Store) SettingOrInit(ctx context.Context, key, init string) (string, error) {
	row := models.Setting{Key: key, Value: init, UpdatedAt: time.Now().UTC()}
	if err := s.with(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return "", fmt.Errorf("initialise setting %s: %w", key, err)
	}
	v, _, err := s.Setting(ctx, key)
	return v, err
}

// Settings returns the values of those of keys that were ever set.
func (s *Store) Settings(ctx context.Context, keys ...string) (map[string]string, error) {
	var rows []models.Setting
	if err := s.with(ctx).Where("key IN ?", keys).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read settings %v: %w", keys, err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Key] = r.Value
	}
	return out, nil
}
