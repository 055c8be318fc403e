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
			n, other := len(page.Jobs), len(page.Briefs)
			if c.q.Brief {
				n, other = other, n
			}
			if n != c.want || other != 0 || (page.NextCursor == "") != c.lastPage {
				t.Errorf("List(%+v) = %d jobs and %d of the other kind, next cursor %q; want %d, last page %v", c.q, n, other, page.NextCursor, c.want, c.lastPage)
			}
		}
		// A brief page's cursor continues where it ended.
		first, err := svc.List(ctx, jobs.Scope{All: true}, jobs.ListQuery{Brief: true})
		must(t, err)
		rest, err := svc.List(ctx, jobs.Scope{All: true}, jobs.ListQuery{Brief: true, Cursor: first.NextCursor})
		must(t, err)
		seen := map[int64]bool{}
		for _, b := range append(first.Briefs, rest.Briefs...) {
			seen[b.ID] = true
		}
		if len(rest.Briefs) != 5 || len(seen) != jobs.PageLimit+5 || rest.NextCursor != "" {
			t.Errorf("the second brief page = %d jobs (%d different in both pages), next cursor %q; want the other 5", len(rest.Briefs), len(seen), rest.NextCursor)
		}
	})
}

// Every project's name comes with the page when asked, for a caller who reads every
// project only: a member's list names no project it does not read.
func TestListWithProjectNames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		svc := jobs.New(st, audit.New(st, time.Now), noKick{}, nil)
		user := &models.User{Username: "ada"}
		must(t, st.CreateUser(ctx, user))
		team := &models.Team{Name: "vision"}
		must(t, st.CreateTeam(ctx, team))
		var ids []int64
		for _, name := range []string{"segment", "detect"} {
			p := &models.Project{TeamID: team.ID, Name: name}
			must(t, st.CreateProject(ctx, p))
			must(t, st.CreateJob(ctx, &models.Job{Name: "train-" + name, ProjectID: p.ID, UserID: user.ID, PriorityClass: "research"}, "test"))
			ids = append(ids, p.ID)
		}
		page, err := svc.List(ctx, jobs.Scope{All: true}, jobs.ListQuery{Brief: true, ProjectNames: true})
		must(t, err)
		if len(page.Briefs) != 2 || len(page.ProjectNames) != 2 || page.ProjectNames[0] != "detect" || page.ProjectNames[1] != "segment" {
			t.Errorf("all projects' page = %d jobs, names %v; want 2 jobs and detect, segment", len(page.Briefs), page.ProjectNames)
		}
		page, err = svc.List(ctx, jobs.Scope{All: true}, jobs.ListQuery{Brief: true})
		must(t, err)
		if len(page.Briefs) != 2 || page.ProjectNames != nil {
			t.Errorf("a page that asks for no names = %d jobs, names %v", len(page.Briefs), page.ProjectNames)
		}
		page, err = svc.List(ctx, jobs.Scope{ProjectIDs: ids[:1]}, jobs.ListQuery{Brief: true, ProjectNames: true})
		must(t, err)
		if len(page.Briefs) != 1 || page.Briefs[0].ProjectName != "segment" || page.ProjectNames != nil {
			t.Errorf("a member's page = %+v, names %v; want segment's job and no names", page.Briefs, page.ProjectNames)
		}
	})
}
