package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestCostModelsMatchSchema(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, m := range []any{&models.LedgerDay{}, &models.AlertDelivery{}, &models.LedgerEntry{}} {
			missing, err := s.MissingColumns(m)
			if err != nil || len(missing) > 0 {
				t.Errorf("%s: missing %v, %v", reflect.TypeOf(m).Elem().Name(), missing, err)
			}
		}
	})
}

// Roll-ups group the daily ledger by day, ISO week (from Monday) and month on both
// databases, agree with the entries themselves, and filter and rank.
func TestCostRollupBuckets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		job := &models.Job{Name: "j", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		if err := s.CreateJob(ctx, job, "test"); err != nil {
			t.Fatal(err)
		}
		// Sunday 1 March 23:00, Monday 2 March 00:00 and 13:00, Tuesday 31 March 23:00, Wednesday 1 April.
		var entries []models.LedgerEntry
		for i, start := range []string{"2026-03-01T23:00:00Z", "2026-03-02T00:00:00Z", "2026-03-02T13:00:00Z", "2026-03-31T23:00:00Z", "2026-04-01T00:00:00Z"} {
			at, _ := time.Parse(time.RFC3339, start)
			e := models.LedgerEntry{JobID: &job.ID, UserID: &u.ID, ProjectID: &p.ID, TeamID: &p.TeamID, Resource: "gpu",
				GPUModel: "A100-80GB", QuantityMilli: 1000, RateMicros: int64(i+1) * 1_000_000, AmountMicros: int64(i+1) * 1_000_000,
				PeriodStart: at, PeriodEnd: at.Add(time.Hour)}
			entries = append(entries, e)
		}
		idle := entries[0]
		idle.JobID, idle.UserID, idle.ProjectID, idle.TeamID, idle.AmountMicros = nil, nil, nil, nil, 500_000
		if err := s.AppendLedgerEntries(ctx, append(entries, idle)); err != nil {
			t.Fatal(err)
		}
		from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		cases := []struct {
			q    store.RollupQuery
			want string
		}{
			{store.RollupQuery{Bucket: store.BucketDay, ChargedOnly: true}, "2026-03-01=1 2026-03-02=5 2026-03-31=4 2026-04-01=5"},
			{store.RollupQuery{Bucket: store.BucketWeek, ChargedOnly: true}, "2026-02-23=1 2026-03-02=5 2026-03-30=9"},
			{store.RollupQuery{Bucket: store.BucketMonth}, "2026-03-01=10.5 2026-04-01=5"},
			{store.RollupQuery{By: store.ByJob}, fmt.Sprintf("%d=15 0=0.5", job.ID)},
			{store.RollupQuery{By: store.ByTeam, TeamIDs: []int64{p.TeamID}}, fmt.Sprintf("%d=15", p.TeamID)},
			{store.RollupQuery{By: store.ByGPUModel, ChargedOnly: true}, "A100-80GB=15"},
			{store.RollupQuery{By: store.ByUser, UserIDs: []int64{u.ID + 100}}, ""},
			{store.RollupQuery{By: store.ByJob, Limit: 1}, fmt.Sprintf("%d=15", job.ID)},
		}
		for _, c := range cases {
			c.q.From, c.q.To = from, to
			for name, fn := range map[string]func(context.Context, store.RollupQuery) ([]store.RollupRow, error){
				"daily": s.CostRollup, "entries": s.CostRollupFromEntries} {
				rows, err := fn(ctx, c.q)
				if err != nil {
					t.Fatalf("%s %+v: %v", name, c.q, err)
				}
				if got := formatRows(rows); got != c.want {
					t.Errorf("%s by %q per %q = %q, want %q", name, c.q.By, c.q.Bucket, got, c.want)
				}
			}
		}
		if _, err := s.CostRollup(ctx, store.RollupQuery{Bucket: "year", From: from, To: to}); err == nil {
			t.Error("an unknown bucket must be refused")
		}
		if _, err := s.CostRollup(ctx, store.RollupQuery{By: "colour", From: from, To: to}); err == nil {
			t.Error("an unknown dimension must be refused")
		}
	})
}

func formatRows(rows []store.RollupRow) string {
	out := ""
	for i, r := range rows {
		if i > 0 {
			out += " "
		}
		switch {
		case !r.Bucket.IsZero():
			out += r.Bucket.Format(time.DateOnly)
		case r.Name != "":
			out += r.Name
		default:
			out += fmt.Sprint(r.Key)
		}
		out += "=" + fmt.Sprint(float64(r.AmountMicros)/1e6)
	}
	return out
}

// The metering lock serialises metering runs and keeps their watermark.
func TestMeteringWatermark(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, ok, err := s.MeteredUntil(ctx); ok || err != nil {
			t.Fatalf("fresh store metered = %v, %v; want nothing", ok, err)
		}
		mark := time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)
		err := s.InTx(ctx, func(tx *store.Store) error {
			if _, ok, err := tx.LockMetering(ctx); ok || err != nil {
				return fmt.Errorf("first lock: ok %v, %v", ok, err)
			}
			return tx.SetMeteredUntil(ctx, mark)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *store.Store) error {
			got, ok, err := tx.LockMetering(ctx)
			if !ok || err != nil || !got.Equal(mark) {
				return fmt.Errorf("second lock: %v, %v, %v; want %v", got, ok, err, mark)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
