package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/models"
)

// CreateCostRate inserts a rate. A rate for the same key (resource, GPU model, pool,
// capacity type, image) taking effect at the same instant is ErrConflict: two prices
// for one moment would make the past ambiguous.
func (s *Store) CreateCostRate(ctx context.Context, r *models.CostRate) error {
	err := s.InTx(ctx, func(tx *Store) error {
		q := tx.with(ctx).Model(&models.CostRate{}).
			Where("resource = ? AND gpu_model = ? AND capacity_type = ? AND effective_from = ?",
				r.Resource, r.GPUModel, r.CapacityType, r.EffectiveFrom)
		q = whereOptional(q, "pool_id", r.PoolID)
		q = whereOptional(q, "image_id", r.ImageID)
		var n int64
		if err := q.Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: a %s rate for this key already takes effect at %s", ErrConflict, r.Resource, r.EffectiveFrom.Format(time.RFC3339))
		}
		return translate(tx.with(ctx).Create(r).Error)
	})
	if err != nil {
		return fmt.Errorf("create %s rate: %w", r.Resource, err)
	}
	return nil
}

// CostRates returns every rate, by resource, GPU model and effective date.
func (s *Store) CostRates(ctx context.Context) ([]models.CostRate, error) {
	var out []models.CostRate
	if err := s.with(ctx).Order("resource, gpu_model, effective_from, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list cost rates: %w", err)
	}
	return out, nil
}

// CostRateByID returns the rate with id.
func (s *Store) CostRateByID(ctx context.Context, id int64) (*models.CostRate, error) {
	var r models.CostRate
	if err := translate(s.with(ctx).First(&r, id).Error); err != nil {
		return nil, fmt.Errorf("cost rate %d: %w", id, err)
	}
	return &r, nil
}

// RateReferencesExist reports whether the pool and the image a rate names exist (a nil one does).
func (s *Store) RateReferencesExist(ctx context.Context, poolID, imageID *int64) (poolOK, imageOK bool, err error) {
	exists := func(model any, id *int64) (bool, error) {
		if id == nil {
			return true, nil
		}
		var n int64
		err := s.with(ctx).Model(model).Where("id = ?", *id).Count(&n).Error
		return n > 0, err
	}
	if poolOK, err = exists(&models.NodePool{}, poolID); err != nil {
		return false, false, fmt.Errorf("check pool of rate: %w", err)
	}
	if imageOK, err = exists(&models.Image{}, imageID); err != nil {
		return false, false, fmt.Errorf("check image of rate: %w", err)
	}
	return poolOK, imageOK, nil
}

// DeleteCostRate removes the rate with id if it takes effect at or after notBefore;
// an earlier one may already have priced the ledger and is ErrStale.
func (s *Store) DeleteCostRate(ctx context.Context, id int64, notBefore time.Time) error {
	res := s.with(ctx).Where("id = ? AND effective_from >= ?", id, notBefore).Delete(&models.CostRate{})
	if res.Error != nil {
		return fmt.Errorf("delete cost rate %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := s.CostRateByID(ctx, id); err != nil {
			return fmt.Errorf("delete cost rate %d: %w", id, err)
		}
		return fmt.Errorf("delete cost rate %d: %w: it took effect before %s and may have priced the ledger", id, ErrStale, notBefore.Format(time.RFC3339))
	}
	return nil
}

// whereOptional matches a nullable reference: IS NULL for nil, equality otherwise.
func whereOptional(q *gorm.DB, column string, v *int64) *gorm.DB {
	if v == nil {
		return q.Where(column + " IS NULL")
	}
	return q.Where(column+" = ?", *v)
}
