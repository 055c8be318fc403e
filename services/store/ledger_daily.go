package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gantry-gpu/gantry/models"
)

// dailyKey is the key of one ledger_daily row.
type dailyKey struct {
	day                                   time.Time
	job, user, project, team, pool, image int64
	gpuModel, resource                    string
}

// addToDailyLedger adds entries to the per-day sums, in the transaction that appends
// them, so that the sums never drift from the ledger.
func (s *Store) addToDailyLedger(ctx context.Context, entries []models.LedgerEntry) error {
	sums := map[dailyKey]*models.LedgerDay{}
	for _, e := range entries {
		day := e.PeriodStart.UTC().Truncate(24 * time.Hour)
		k := dailyKey{day: day, job: val(e.JobID), user: val(e.UserID), project: val(e.ProjectID), team: val(e.TeamID),
			pool: val(e.PoolID), image: val(e.ImageID), gpuModel: e.GPUModel, resource: e.Resource}
		d := sums[k]
		if d == nil {
			d = &models.LedgerDay{Day: day, JobID: k.job, UserID: k.user, ProjectID: k.project, TeamID: k.team,
				PoolID: k.pool, ImageID: k.image, GPUModel: k.gpuModel, Resource: k.resource}
			sums[k] = d
		}
		d.QuantityMilli += e.QuantityMilli
		d.AmountMicros += e.AmountMicros
	}
	if len(sums) == 0 {
		return nil
	}
	rows := make([]models.LedgerDay, 0, len(sums))
	for _, d := range sums {
		rows = append(rows, *d)
	}
	// A fixed order keeps concurrent upserts from locking rows in opposite orders.
	slices.SortFunc(rows, func(a, b models.LedgerDay) int {
		return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.UserID, b.UserID),
			cmp.Compare(a.ProjectID, b.ProjectID), cmp.Compare(a.TeamID, b.TeamID), cmp.Compare(a.PoolID, b.PoolID),
			cmp.Compare(a.ImageID, b.ImageID), cmp.Compare(a.GPUModel, b.GPUModel), cmp.Compare(a.Resource, b.Resource))
	})
	upsert := clause.OnConflict{
		Columns: []clause.Column{{Name: "day"}, {Name: "job_id"}, {Name: "user_id"}, {Name: "project_id"}, {Name: "team_id"},
			{Name: "pool_id"}, {Name: "image_id"}, {Name: "gpu_model"}, {Name: "resource"}},
		DoUpdates: clause.Assignments(map[string]any{
			"quantity_milli": gorm.Expr("ledger_daily.quantity_milli + excluded.quantity_milli"),
			"amount_micros":  gorm.Expr("ledger_daily.amount_micros + excluded.amount_micros"),
		}),
	}
	if err := s.batch(ctx).Clauses(upsert).CreateInBatches(&rows, 100).Error; err != nil {
		return fmt.Errorf("add to the daily ledger: %w", err)
	}
	return nil
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
