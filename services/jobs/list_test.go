package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The portal's page shows a screenful of jobs; the API a longer page; either as many
// as asked for.
func TestListPageSizes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		svc := jobs.New(st, audit.New(st, time.Now), noKick{}, nil)
		user := &models.User{Username: "ada"}
		must(t, st.CreateUser(ctx, user))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		p := &models.Project{TeamID: team.ID, Name: "detect"}
		must(t, st.CreateProject(ctx, p))
		for i := range jobs.PageLimit + 5 {
			must(t, st.CreateJob(ctx, &models.Job{Name: fmt.Sprintf("train-%02d", i), ProjectID: p.ID, UserID: user.ID, PriorityClass: "research"}, "test"))
		}
		for _, c := range []struct {
			q        jobs.ListQuery
			want     int
			lastPage bool
		}{
			{jobs.ListQuery{Brief: true}, jobs.PageLimit, false},
			{jobs.ListQuery{}, jobs.PageLimit + 5, true},
			{jobs.ListQuery{Brief: true, Limit: "30"}, jobs.PageLimit + 5, true},
			{jobs.ListQuery{Limit: "3"}, 3, false},
		} {
			page, err := svc.List(ctx, jobs.Scope{All: true}, c.q)
			must(t, err)
			if len(page.Jobs) != c.want || (page.NextCursor == "") != c.lastPage {
				t.Errorf("List(%+v) = %d jobs, next cursor %q; want %d, last page %v", c.q, len(page.Jobs), page.NextCursor, c.want, c.lastPage)
			}
		}
	})
}
