package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// QueueLengths counts the queued jobs (no others) by class and team, a team's projects
// together, ordered by class and team.
func TestQueueLengthsCountByClassAndTeam(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		u, detect := fixture(t, st) // team vision
		speech := &models.Team{Name: "speech"}
		if err := st.CreateTeam(ctx, speech); err != nil {
			t.Fatal(err)
		}
		projects := map[string]int64{"detect": detect.ID}
		for _, p := range []*models.Project{{TeamID: detect.TeamID, Name: "segment"}, {TeamID: speech.ID, Name: "asr"}} {
			if err := st.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			projects[p.Name] = p.ID
		}
		for _, j := range []struct {
			project, class string
			held           bool
		}{
			{"detect", "research", false}, {"segment", "research", false}, {"segment", "research", false},
			{"detect", "production", false}, {"asr", "research", false}, {"asr", "production", true},
		} {
			job := &models.Job{Name: "j", ProjectID: projects[j.project], UserID: u.ID, Command: `["true"]`, Env: "{}", PriorityClass: j.class, Replicas: 1}
			if err := st.CreateJob(ctx, job, "user:ada"); err != nil {
				t.Fatal(err)
			}
			if j.held {
				if err := st.TransitionJob(ctx, job.ID, store.Transition{From: models.JobQueued, To: models.JobHeld, Reason: "held"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := st.QueueLengths(ctx)
		want := []store.QueueLength{{Class: "production", Team: "vision", Jobs: 1}, {Class: "research", Team: "speech", Jobs: 1}, {Class: "research", Team: "vision", Jobs: 3}}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("QueueLengths = %+v, %v; want %+v", got, err, want)
		}
	})
}
