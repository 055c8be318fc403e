package classes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/classes"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func field(err error) string {
	var fe *models.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func TestPriorityClasses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		svc := classes.New(st, audit.New(st, time.Now))
		for _, c := range []struct {
			in    classes.Input
			field string
		}{
			{classes.Input{Name: "Urgent!", Weight: 10}, "name"},
			{classes.Input{Name: "urgent", Weight: 0}, "weight"},
			{classes.Input{Name: "urgent", Weight: 10, Grace: -time.Second}, "checkpoint_grace"},
			{classes.Input{Name: "urgent", Weight: 10, MaxRunTime: 10 * time.Second}, "max_run_time"},
			{classes.Input{Name: "research", Weight: 10}, "name"},
		} {
			if _, err := svc.Create(ctx, c.in); field(err) != c.field {
				t.Errorf("%+v: %v, want a field error on %s", c.in, err, c.field)
			}
		}
		if _, err := svc.Create(ctx, classes.Input{Name: "urgent", Weight: 2000, CanPreempt: true, Grace: time.Minute, MaxRunTime: 4 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		c, _ := st.PriorityClassByName(ctx, "urgent")
		if c.Weight != 2000 || !c.CanPreempt || c.CheckpointGraceSec != 60 || c.MaxRunTimeSec != 14400 {
			t.Fatalf("stored class = %+v", c)
		}
		if _, err := svc.Update(ctx, classes.Input{Name: "urgent", Weight: 1500, Grace: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Update(ctx, classes.Input{Name: "ghost", Weight: 1}); !errors.As(err, new(*classes.NotFoundError)) {
			t.Errorf("updating a missing class: %v", err)
		}
		u := &models.User{Username: "ada"}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		team := &models.Team{Name: "t"}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		p := &models.Project{TeamID: team.ID, Name: "p"}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		j := &models.Job{Name: "j", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "urgent"}
		if err := st.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
		if err := svc.Delete(ctx, "urgent"); field(err) != "name" || !strings.Contains(err.Error(), "1 jobs of class urgent have not ended") {
			t.Fatalf("deleting a class in use: %v", err)
		}
		if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled, Reason: "cancelled", Actor: "test"}); err != nil {
			t.Fatal(err)
		}
		if err := svc.Delete(ctx, "urgent"); err != nil {
			t.Fatal(err)
		}
		events, _ := st.AuditEventsBefore(ctx, store.AuditFilter{ObjectTypes: []string{"priority_class"}}, 0, 10)
		var got []string
		for _, e := range events {
			got = append(got, e.Action)
		}
		if strings.Join(got, ",") != "priority_class.deleted,priority_class.changed,priority_class.created" || !strings.Contains(events[1].Detail, `"before":{`) {
			t.Errorf("audit = %v", got)
		}
	})
}
