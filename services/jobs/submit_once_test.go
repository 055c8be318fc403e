package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A submission sent again with its idempotency key gets the job the first queued, also
// when both arrive at once; the key with another body is refused; another user's key,
// or one past its day, queues anew; a malformed key is refused by name.
func TestSubmitOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		svc := jobs.New(st, audit.New(st, time.Now), noKick{}, nil)
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		must(t, st.CreateProject(ctx, &models.Project{TeamID: team.ID, Name: "detect"}))
		ada, bob := &models.User{Username: "ada"}, &models.User{Username: "bob"}
		must(t, st.CreateUser(ctx, ada))
		must(t, st.CreateUser(ctx, bob))
		spec := func(name string) jobs.Spec {
			return jobs.Spec{Project: "detect", Name: name, Command: []string{"true"}, Resources: jobs.Resources{GPUs: 1}}
		}
		count := func() int {
			t.Helper()
			js, err := st.Jobs(ctx, store.JobFilter{Limit: 100})
			must(t, err)
			return len(js)
		}

		first, created, err := svc.SubmitOnce(ctx, ada, spec("train"), "key-1", "hash-a")
		if err != nil || !created {
			t.Fatalf("first submission: %v, created %v", err, created)
		}
		again, created, err := svc.SubmitOnce(ctx, ada, spec("train"), "key-1", "hash-a")
		if err != nil || created || again.ID != first.ID || count() != 1 {
			t.Fatalf("the same again: job %v, created %v, %v; %d jobs; want job %d and no new one", again, created, err, count(), first.ID)
		}
		var fe *models.FieldError
		if _, _, err := svc.SubmitOnce(ctx, ada, spec("other"), "key-1", "hash-b"); !errors.As(err, &fe) || fe.Field != jobs.SubmitKeyField || !strings.Contains(fe.Message, "another job") {
			t.Errorf("the key with another body: %v", err)
		}
		if j, created, err := svc.SubmitOnce(ctx, bob, spec("train"), "key-1", "hash-a"); err != nil || !created || j.ID == first.ID {
			t.Errorf("bob's key of the same name: %v, created %v", err, created)
		}

		// Both at once: one job.
		before := count()
		var wg sync.WaitGroup
		ids := make([]int64, 4)
		for i := range ids {
			wg.Go(func() {
				j, _, err := svc.SubmitOnce(ctx, ada, spec("twin"), "key-twin", "hash-t")
				if err != nil {
					t.Errorf("submission %d: %v", i, err)
					return
				}
				ids[i] = j.ID
			})
		}
		wg.Wait()
		if count() != before+1 || ids[0] != ids[1] || ids[1] != ids[2] || ids[2] != ids[3] {
			t.Errorf("four at once queued %d jobs: %v", count()-before, ids)
		}

		// A key past its day holds no more.
		must(t, st.CreateJobSubmitKey(ctx, &models.JobSubmitKey{UserID: ada.ID, IdempotencyKey: "key-old", BodyHash: "hash-o", JobID: first.ID,
			CreatedAt: time.Now().Add(-jobs.SubmitKeyTTL - time.Minute)}))
		if j, created, err := svc.SubmitOnce(ctx, ada, spec("later"), "key-old", "hash-o"); err != nil || !created || j.ID == first.ID {
			t.Errorf("a key past its day: %v, created %v", err, created)
		}

		for _, key := range []string{"", "with space", strings.Repeat("k", jobs.MaxSubmitKey+1), "naïve"} {
			if _, _, err := svc.SubmitOnce(ctx, ada, spec("bad"), key, "h"); !errors.As(err, &fe) || fe.Field != jobs.SubmitKeyField {
				t.Errorf("key %q: %v", key, err)
			}
		}
	})
}
