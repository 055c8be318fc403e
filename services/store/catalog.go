package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// CreateImage inserts an image catalog entry; a taken name is ErrConflict.
func (s *Store) CreateImage(ctx context.Context, img *models.Image) error {
	if err := translate(s.with(ctx).Create(img).Error); err != nil {
		return fmt.Errorf("create image %s: %w", img.Name, err)
	}
	return nil
}

// ImageByName returns the catalog entry called name.
func (s *Store) ImageByName(ctx context.Context, name string) (*models.Image, error) {
	var img models.Image
	if err := translate(s.with(ctx).Where("name = ?", name).First(&img).Error); err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	return &img, nil
}

// ImageByID returns the catalog entry with id.
func (s *Store) ImageByID(ctx context.Context, id int64) (*models.Image, error) {
	var img models.Image
	if err := translate(s.with(ctx).First(&img, id).Error); err != nil {
		return nil, fmt.Errorf("image %d: %w", id, err)
	}
	return &img, nil
}

// Images returns the whole catalog, certified first, then by name.
func (s *Store) Images(ctx context.Context) ([]models.Image, error) {
	return s.ImagesMatching(ctx, ImageFilter{})
}

// PriorityClasses returns the classes, highest weight first.
func (s *Store) PriorityClasses(ctx context.Context) ([]models.PriorityClass, error) {
	var out []models.PriorityClass
	if err := s.with(ctx).Order("weight DESC, name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list priority classes: %w", err)
	}
	return out, nil
}

// PriorityClassByName returns the class called name.
func (s *Store) PriorityClassByName(ctx context.Context, name string) (*models.PriorityClass, error) {
	var pc models.PriorityClass
	if err := translate(s.with(ctx).Where("name = ?", name).First(&pc).Error); err != nil {
		return nil, fmt.Errorf("priority class %s: %w", name, err)
	}
	return &pc, nil
}

// ImageFilter selects catalog entries; zero fields select everything.
type ImageFilter struct {
	Query     string // matched against name, reference, framework and description
	Framework string
	Status    string
}

// ImagesMatching returns the catalog entries matching f, certified first.
func (s *Store) ImagesMatching(ctx context.Context, f ImageFilter) ([]models.Image, error) {
	q := s.with(ctx).Model(&models.Image{})
	if f.Query != "" {
		like := "%" + strings.ToLower(f.Query) + "%"
		q = q.Where("LOWER(name) LIKE ? OR LOWER(reference) LIKE ? OR LOWER(framework) LIKE ? OR LOWER(description) LIKE ?", like, like, like, like)
	}
	if f.Framework != "" {
		q = q.Where("framework = ?", f.Framework)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	var out []models.Image
	order := "CASE status WHEN 'certified' THEN 0 WHEN 'uncertified' THEN 1 ELSE 2 END, name"
	if err := q.Order(order).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	return out, nil
}

// UpdateImage saves the mutable fields of img (status, pre-pull, metadata).
func (s *Store) UpdateImage(ctx context.Context, img *models.Image) error {
	if err := translate(s.with(ctx).Save(img).Error); err != nil {
		return fmt.Errorf("update image %s: %w", img.Name, err)
	}
	return nil
}
