package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestMigrateIsIdempotentAndReady(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		st, err := s.SchemaStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Ready() || st.Current == 0 {
			t.Fatalf("after migrate: %+v, want current == latest > 0", st)
		}
		again, err := s.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 0 {
			t.Fatalf("second migrate applied %v, want nothing", again)
		}
	})
}

func TestMigrateRefusesNewerDatabase(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.Config(t)
			s := storetest.Open(t, cfg)
			storetest.Exec(t, cfg, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', CURRENT_TIMESTAMP)")
			_, err := s.Migrate(ctx)
			if !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("Migrate on a newer database: %v, want ErrSchemaTooNew", err)
			}
			st, _ := s.SchemaStatus(ctx)
			if st.Ready() {
				t.Fatal("a newer database must not be reported ready")
			}
		})
	}
}

// Every field of every model must have its column: models and migrations never drift.
func TestModelsMatchSchema(t *testing.T) {
	all := []any{
		&models.User{}, &models.Team{}, &models.Project{}, &models.Membership{}, &models.GroupMapping{},
		&models.Session{}, &models.APIToken{}, &models.Setting{}, &models.NodePool{}, &models.Node{},
		&models.GPUDevice{}, &models.GPUSlice{}, &models.JoinToken{}, &models.Image{}, &models.NodeImage{},
		&models.Job{}, &models.Allocation{}, &models.JobEvent{}, &models.JobLogChunk{}, &models.JobLogTail{}, &models.UnmaskedJobLog{}, &models.JobSecretEnv{}, &models.JobMetric{},
		&models.JobTemplate{}, &models.PriorityClass{}, &models.Quota{}, &models.CostRate{},
		&models.LedgerEntry{}, &models.Budget{}, &models.AlertRule{}, &models.Alert{},
		&models.NotificationChannel{}, &models.AuditEvent{}, &models.FeedbackItem{}, &models.FeedbackVote{},
		&models.FeedbackComment{}, &models.Notification{}, &models.TelemetrySample{}, &models.CasbinRule{},
		&models.PoolInstance{}, &models.PoolEvent{}, &models.PoolSample{}, &models.SlurmJob{}, &models.SlurmForeignJob{}, &models.SlurmClusterMove{},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, m := range all {
			missing, err := s.MissingColumns(m)
			if err != nil {
				t.Fatalf("%s: %v", reflect.TypeOf(m).Elem().Name(), err)
			}
			if len(missing) > 0 {
				t.Errorf("%s: no column for %v", reflect.TypeOf(m).Elem().Name(), missing)
			}
		}
	})
}

// Migration 0034 turns SQLite's jobs_submitted into the covering jobs_submitted_brief,
// on a database with jobs, and leaves PostgreSQL's as it was; the list newest first
// reads the same jobs in the same order after it.
func TestMigrationCoversTheJobsPage(t *testing.T) {
	t.Parallel()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(m migrations.Migration) bool { return m.Name == "jobs_submitted_brief" })
	if i < 0 {
		t.Fatal("no migration jobs_submitted_brief")
	}
	version := all[i].Version
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := b.Config(t)
			s := storetest.Open(t, cfg)
			has, lacks := "jobs_submitted_brief", "jobs_submitted"
			if b.Name == "postgres" {
				has, lacks = lacks, has
			}
			check := func(when string) {
				t.Helper()
				idx := jobIndexes(t, cfg)
				if !slices.Contains(idx, has) || slices.Contains(idx, lacks) {
					t.Fatalf("%s: the jobs table has indexes %v, want %s and not %s", when, idx, has, lacks)
				}
			}
			check("up to date")
			seedJobs(t, cfg, s, 60)
			f := store.JobFilter{Sort: store.JobsBySubmitted, Columns: store.BriefJobColumns, Limit: 26}
			before, err := s.BriefJobs(ctx, f)
			if err != nil || len(before) != 26 {
				t.Fatalf("%d jobs listed, %v", len(before), err)
			}
			if b.Name == "sqlite" {
				// As the database was before 0034.
				storetest.Exec(t, cfg, "DROP INDEX jobs_submitted_brief")
				storetest.Exec(t, cfg, "CREATE INDEX jobs_submitted ON jobs (submitted_at, id)")
			}
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version))
			if applied, err := s.Migrate(ctx); err != nil || !slices.Equal(applied, []int{version}) {
				t.Fatalf("migrate applied %v, %v; want [%d]", applied, err, version)
			}
			check("migrated again")
			after, err := s.BriefJobs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after, before) {
				t.Errorf("after the migration the list reads %d jobs, not the %d it read before", len(after), len(before))
			}
		})
	}
}

// jobIndexes names the indexes of the jobs table.
func jobIndexes(t *testing.T, cfg store.Config) []string {
	t.Helper()
	db, err := storetest.SQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	query := "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs'"
	if cfg.DatabaseURL != "" {
		query = "SELECT indexname FROM pg_indexes WHERE tablename = 'jobs'"
	}
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
