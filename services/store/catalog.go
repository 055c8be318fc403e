package store

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// ImageUses counts, per catalog image, the jobs submitted at or after since that run
// in it (jobs that named a reference outside the catalog count for no image).
func (s *Store) ImageUses(ctx context.Context, since time.Time) (map[int64]int, error) {
	var rows []struct {
		ImageID int64
		Jobs    int
	}
	err := s.read(ctx).Model(&models.Job{}).Select("image_id, COUNT(*) AS jobs").
		Where("image_id IS NOT NULL AND submitted_at >= ?", since.UTC()).Group("image_id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs per image since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	out := make(map[int64]int, len(rows))
	for _, r := range rows {
		out[r.ImageID] = r.Jobs
	}
	return out, nil
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
		like := containing(f.Query)
		q = q.Where(`LOWER(name) LIKE ? ESCAPE '\' OR LOWER(reference) LIKE ? ESCAPE '\' OR LOWER(framework) LIKE ? ESCAPE '\' OR LOWER(description) LIKE ? ESCAPE '\'`, like, like, like, like)
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

// ReplaceNodeImages records that the node holds exactly the images imageIDs; an
// image it held already keeps the time it was first seen there.
func (s *Store) ReplaceNodeImages(ctx context.Context, nodeID int64, imageIDs []int64, at time.Time) error {
	db := s.with(ctx)
	gone := db.Where("node_id = ?", nodeID)
	if len(imageIDs) > 0 {
		gone = gone.Where("image_id NOT IN ?", imageIDs)
	}
	if err := gone.Delete(&models.NodeImage{}).Error; err != nil {
		return fmt.Errorf("images of node %d: %w", nodeID, err)
	}
	var have []int64
	if err := db.Model(&models.NodeImage{}).Where("node_id = ?", nodeID).Pluck("image_id", &have).Error; err != nil {
		return fmt.Errorf("images of node %d: %w", nodeID, err)
	}
	for _, id := range imageIDs {
		if slices.Contains(have, id) {
			continue
		}
		have = append(have, id)
		if err := translate(db.Create(&models.NodeImage{NodeID: nodeID, ImageID: id, PulledAt: at.UTC()}).Error); err != nil {
			return fmt.Errorf("images of node %d: %w", nodeID, err)
		}
	}
	return nil
}

// NodeImages returns which nodes hold which catalog images, by node and image.
func (s *Store) NodeImages(ctx context.Context) ([]models.NodeImage, error) {
	var out []models.NodeImage
	if err := s.with(ctx).Order("node_id, image_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list node images: %w", err)
	}
	return out, nil
}
