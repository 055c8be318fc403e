package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
)

// Roll-up dimensions: what cost is grouped by.
const (
	ByTotal    = ""
	ByUser     = "user"
	ByProject  = "project"
	ByTeam     = "team"
	ByPool     = "pool"
	ByGPUModel = "gpu_model"
	ByImage    = "image"
	ByJob      = "job"
	ByResource = "resource"
)

// Roll-up buckets: the time grain, or none for one total per key.
const (
	BucketNone  = ""
	BucketDay   = "day"
	BucketWeek  = "week" // ISO weeks, starting on Monday
	BucketMonth = "month"
)

// rollupColumns maps each dimension to its column; text columns come back in Name.
var rollupColumns = map[string]struct {
	column string
	text   bool
}{
	ByUser: {"user_id", false}, ByProject: {"project_id", false}, ByTeam: {"team_id", false},
	ByPool: {"pool_id", false}, ByImage: {"image_id", false}, ByJob: {"job_id", false},
	ByGPUModel: {"gpu_model", true}, ByResource: {"resource", true},
}

// RollupQuery selects and groups cost. Zero filters select everything.
type RollupQuery struct {
	By     string
	Bucket string
	// From and To bound the days (UTC) summed: From inclusive, To exclusive.
	From, To   time.Time
	TeamIDs    []int64
	ProjectIDs []int64
	UserIDs    []int64
	JobIDs     []int64
	Resources  []string
	// ChargedOnly leaves out unallocated capacity, the entries charged to no project.
	ChargedOnly bool
	// Limit keeps the most expensive keys (with no bucket only); 0 keeps all.
	Limit int
}

// RollupRow is the cost of one key (and bucket). Key is the id for id dimensions (0:
// none, as for unallocated capacity); Name the value for text ones.
type RollupRow struct {
	Key           int64
	Name          string
	Bucket        time.Time
	QuantityMilli int64
	AmountMicros  int64
}

// CostRollup sums the daily ledger by q.
func (s *Store) CostRollup(ctx context.Context, q RollupQuery) ([]RollupRow, error) {
	return s.rollup(ctx, q, "ledger_daily", "day", "project_id <> 0")
}

// CostRollupFromEntries sums the ledger entries themselves by q: the reference that the
// daily ledger must agree with, and the baseline of the roll-up benchmark.
func (s *Store) CostRollupFromEntries(ctx context.Context, q RollupQuery) ([]RollupRow, error) {
	return s.rollup(ctx, q, "ledger_entries", "period_start", "project_id IS NOT NULL")
}

func (s *Store) rollup(ctx context.Context, q RollupQuery, table, timeColumn, charged string) ([]RollupRow, error) {
	if q.Bucket != BucketNone && q.Limit > 0 {
		return nil, fmt.Errorf("cost roll-up: a limit applies to totals, not to %s buckets", q.Bucket)
	}
	sel, group := []string{}, []string{}
	if q.By != ByTotal {
		c, ok := rollupColumns[q.By]
		if !ok {
			return nil, fmt.Errorf("cost roll-up: unknown dimension %q", q.By)
		}
		alias := "key_id"
		if c.text {
			alias = "key_name"
		}
		sel = append(sel, c.column+" AS "+alias)
		group = append(group, c.column)
	}
	if q.Bucket != BucketNone {
		expr, err := s.bucketExpr(q.Bucket, timeColumn)
		if err != nil {
			return nil, err
		}
		sel = append(sel, expr+" AS bucket")
		group = append(group, expr)
	}
	sel = append(sel, "SUM(quantity_milli) AS quantity_milli", "SUM(amount_micros) AS amount_micros")
	db := s.with(ctx).Table(table).Select(strings.Join(sel, ", ")).
		Where(timeColumn+" >= ? AND "+timeColumn+" < ?", q.From.UTC(), q.To.UTC())
	db = filterIn(db, "team_id", q.TeamIDs)
	db = filterIn(db, "project_id", q.ProjectIDs)
	db = filterIn(db, "user_id", q.UserIDs)
	db = filterIn(db, "job_id", q.JobIDs)
	if len(q.Resources) > 0 {
		db = db.Where("resource IN ?", q.Resources)
	}
	if q.ChargedOnly {
		db = db.Where(charged)
	}
	if len(group) > 0 {
		db = db.Group(strings.Join(group, ", "))
	}
	if q.Bucket != BucketNone {
		db = db.Order("bucket")
	}
	db = db.Order("amount_micros DESC")
	if q.Limit > 0 {
		db = db.Limit(q.Limit)
	}
	var raw []struct {
		KeyID         *int64
		KeyName       *string
		Bucket        string
		QuantityMilli int64
		AmountMicros  int64
	}
	if err := db.Scan(&raw).Error; err != nil {
		return nil, fmt.Errorf("cost roll-up by %q per %q: %w", q.By, q.Bucket, err)
	}
	out := make([]RollupRow, 0, len(raw))
	for _, r := range raw {
		row := RollupRow{QuantityMilli: r.QuantityMilli, AmountMicros: r.AmountMicros}
		if r.KeyID != nil {
			row.Key = *r.KeyID
		}
		if r.KeyName != nil {
			row.Name = *r.KeyName
		}
		if r.Bucket != "" {
			b, err := time.Parse(time.DateOnly, r.Bucket)
			if err != nil {
				return nil, fmt.Errorf("cost roll-up: read bucket %q: %w", r.Bucket, err)
			}
			row.Bucket = b
		}
		out = append(out, row)
	}
	return out, nil
}

// bucketExpr is SQL giving the first day (YYYY-MM-DD) of the bucket that column falls in.
func (s *Store) bucketExpr(bucket, column string) (string, error) {
	pg := s.dialect == migrations.Postgres
	switch bucket {
	case BucketDay:
		if pg {
			return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')", nil
		}
		return "strftime('%Y-%m-%d', " + column + ")", nil
	case BucketWeek:
		if pg {
			return "to_char(date_trunc('week', " + column + " AT TIME ZONE 'UTC'), 'YYYY-MM-DD')", nil
		}
		// SQLite: forward to Sunday (or stay on it), then back six days to that week's Monday.
		return "date(" + column + ", 'weekday 0', '-6 days')", nil
	case BucketMonth:
		if pg {
			return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-01')", nil
		}
		return "strftime('%Y-%m-01', " + column + ")", nil
	}
	return "", fmt.Errorf("cost roll-up: unknown bucket %q (day, week or month)", bucket)
}

func filterIn(db *gorm.DB, column string, ids []int64) *gorm.DB {
	if len(ids) == 0 {
		return db
	}
	return db.Where(column+" IN ?", ids)
}
