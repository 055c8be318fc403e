package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

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
