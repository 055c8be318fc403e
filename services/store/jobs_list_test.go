package store_test

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// jobsWorld is a small jobs table with ties in every sort column: two projects, two
// users, four states, a catalog image and a custom reference, submissions a minute apart
// in groups of three.
type jobsWorld struct {
	projects [2]int64
	users    [2]int64
	image    int64
	all      []models.Job
}

func newJobsWorld(t *testing.T, s *store.Store) jobsWorld {
	t.Helper()
	ctx := context.Background()
	u, p := fixture(t, s)
	w := jobsWorld{projects: [2]int64{p.ID}, users: [2]int64{u.ID}}
	u2 := &models.User{Username: "grace"}
	if err := s.CreateUser(ctx, u2); err != nil {
		t.Fatal(err)
	}
	p2 := &models.Project{TeamID: p.TeamID, Name: "segment"}
	if err := s.CreateProject(ctx, p2); err != nil {
		t.Fatal(err)
	}
	w.projects[1], w.users[1] = p2.ID, u2.ID
	img := &models.Image{Name: "pytorch-2.4", Reference: "nvcr.io/nvidia/pytorch:24.07-py3", Framework: "pytorch", Status: models.ImageCertified}
	if err := s.CreateImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	w.image = img.ID
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	states := []string{models.JobQueued, models.JobHeld, models.JobCancelled, models.JobFailed}
	for i := range 23 {
		j := &models.Job{
			Name: fmt.Sprintf("run-%d", i%5), ProjectID: w.projects[i%2], UserID: w.users[i/3%2],
			Command: `["true"]`, PriorityClass: "research", GPUs: i % 4,
			SubmittedAt: base.Add(time.Duration(i/3) * time.Minute),
		}
		switch i % 3 {
		case 0:
			j.ImageID, j.ImageRef = &img.ID, img.Reference
		case 1:
			j.ImageRef = "ghcr.io/lab/train:v1"
		}
		if err := s.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
		if to := states[i%4]; to != models.JobQueued {
			if err := s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: to, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := s.Jobs(ctx, store.JobFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	w.all = all
	return w
}

func (w jobsWorld) projectName(id int64) string {
	return map[int64]string{w.projects[0]: "detect", w.projects[1]: "segment"}[id]
}

func (w jobsWorld) username(id int64) string {
	return map[int64]string{w.users[0]: "ada", w.users[1]: "grace"}[id]
}

// want filters and sorts the world's jobs in Go, as the query should.
func (w jobsWorld) want(f store.JobFilter) []int64 {
	var out []models.Job
	for _, j := range w.all {
		if (len(f.ProjectIDs) > 0 && !slices.Contains(f.ProjectIDs, j.ProjectID)) ||
			(f.UserID != 0 && j.UserID != f.UserID) ||
			(len(f.States) > 0 && !slices.Contains(f.States, j.State)) ||
			(f.ImageID != 0 && (j.ImageID == nil || *j.ImageID != f.ImageID)) ||
			(f.ImageRef != "" && j.ImageRef != f.ImageRef) ||
			(!f.SubmittedFrom.IsZero() && j.SubmittedAt.Before(f.SubmittedFrom)) ||
			(!f.SubmittedTo.IsZero() && !j.SubmittedAt.Before(f.SubmittedTo)) {
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b models.Job) int {
		var c int
		switch f.Sort {
		case store.JobsBySubmitted:
			c = a.SubmittedAt.Compare(b.SubmittedAt)
		case store.JobsByName:
			c = strings.Compare(a.Name, b.Name)
		case store.JobsByGPUs:
			c = cmp.Compare(a.GPUs, b.GPUs)
		}
		if c == 0 {
			c = cmp.Compare(a.ID, b.ID)
		}
		if !f.Ascending {
			c = -c
		}
		return c
	})
	ids := make([]int64, len(out))
	for i, j := range out {
		ids[i] = j.ID
	}
	return ids
}

func (w jobsWorld) filters() map[string]store.JobFilter {
	at := w.all[len(w.all)-1].SubmittedAt
	return map[string]store.JobFilter{
		"everything":           {Sort: store.JobsBySubmitted},
		"oldest first":         {Sort: store.JobsBySubmitted, Ascending: true},
		"by name":              {Sort: store.JobsByName, Ascending: true},
		"by name, last":        {Sort: store.JobsByName},
		"most GPUs":            {Sort: store.JobsByGPUs},
		"fewest GPUs":          {Sort: store.JobsByGPUs, Ascending: true},
		"by id":                {},
		"one project":          {Sort: store.JobsBySubmitted, ProjectIDs: w.projects[:1]},
		"one project by name":  {Sort: store.JobsByName, Ascending: true, ProjectIDs: w.projects[:1], States: []string{models.JobFailed}},
		"one project by GPUs":  {Sort: store.JobsByGPUs, ProjectIDs: w.projects[1:]},
		"both projects":        {Sort: store.JobsBySubmitted, ProjectIDs: w.projects[:]},
		"both by name, failed": {Sort: store.JobsByName, Ascending: true, ProjectIDs: w.projects[:], States: []string{models.JobFailed}},
		"one user":             {Sort: store.JobsBySubmitted, UserID: w.users[1]},
		"one state":            {Sort: store.JobsBySubmitted, States: []string{models.JobHeld}},
		"two states":           {Sort: store.JobsByName, States: []string{models.JobFailed, models.JobQueued}},
		"catalog image":        {Sort: store.JobsBySubmitted, ImageID: w.image},
		"custom reference":     {Sort: store.JobsBySubmitted, ImageRef: "ghcr.io/lab/train:v1"},
		"time range":           {Sort: store.JobsBySubmitted, SubmittedFrom: at.Add(2 * time.Minute), SubmittedTo: at.Add(5 * time.Minute)},
		"everything at once":   {Sort: store.JobsByGPUs, ProjectIDs: w.projects[:1], UserID: w.users[0], States: []string{models.JobQueued, models.JobCancelled}, SubmittedFrom: at.Add(time.Minute)},
	}
}

// Pages of four, each continuing after the last key of the one before, add up to
// exactly the filtered, sorted list, on every filter and sort and on both databases;
// each job comes with its project's and user's names.
func TestJobsFilterSortKeyset(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newJobsWorld(t, s)
		for name, f := range w.filters() {
			want := w.want(f)
			if name == "everything" && len(want) != 23 || name == "time range" && len(want) != 9 {
				t.Fatalf("%s: the world has %d jobs for it", name, len(want))
			}
			if got := w.pages(t, s, name, f); !slices.Equal(got, want) {
				t.Errorf("%s: pages give %v, want %v", name, got, want)
			}
			// Named columns, as the page and the API read: the SQL of an unfiltered
			// list is kept for its shape, and no other list may get it.
			f.Columns = []string{"id", "name", "gpus", "submitted_at", "project_id", "user_id"}
			if got := w.pages(t, s, name, f); !slices.Equal(got, want) {
				t.Errorf("%s, named columns: pages give %v, want %v", name, got, want)
			}
		}
	})
}

// pages reads the list of f in pages of four and returns its job ids.
func (w jobsWorld) pages(t *testing.T, s *store.Store, name string, f store.JobFilter) []int64 {
	t.Helper()
	var got []int64
	f.Limit = 4
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("%s: paging does not end: %v", name, got)
		}
		page, err := s.ListedJobs(context.Background(), f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, j := range page {
			got = append(got, j.ID)
			if j.ProjectName != w.projectName(j.ProjectID) || j.Username != w.username(j.UserID) {
				t.Fatalf("%s: job %d of %q by %q", name, j.ID, j.ProjectName, j.Username)
			}
		}
		if len(page) < f.Limit {
			return got
		}
		k := store.KeyOf(&page[len(page)-1].Job)
		f.After = &k
	}
}

// A list over more projects and states than one query merges (a member of hundreds
// of projects; SQLite refuses a UNION of more than 500) still pages in order.
func TestJobsOfManyProjects(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newJobsWorld(t, s)
		ids := w.projects[:]
		for i := range int64(600) {
			ids = append(ids, 1_000_000+i)
		}
		for _, f := range []store.JobFilter{
			{Sort: store.JobsByName, ProjectIDs: ids},
			{Sort: store.JobsBySubmitted, ProjectIDs: ids[:40], States: []string{models.JobFailed, models.JobHeld}},
			{Sort: store.JobsByGPUs, Ascending: true, ProjectIDs: ids[:2], States: models.JobStates},
		} {
			name := fmt.Sprintf("%d projects, %d states by %s", len(f.ProjectIDs), len(f.States), f.Sort)
			if got, want := w.pages(t, s, name, f), w.want(f); !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("%s: pages give %v, want %v", name, got, want)
			}
		}
	})
}

func TestJobsUnknownSort(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		if _, err := s.Jobs(context.Background(), store.JobFilter{Sort: "command"}); err == nil {
			t.Fatal("sorting by an unindexed column was accepted")
		}
	})
}

// Every filter of the list is answered from an index in its sort order: no sort step,
// no scan of the whole table. This is what keeps a page fast at 100,000 jobs; the
// benchmark in cmd/gantry measures it.
func TestJobsListUsesIndexes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newJobsWorld(t, s)
		for name, f := range w.filters() {
			k := store.KeyOf(&w.all[5])
			f.After, f.Limit = &k, 51
			plan, err := s.JobsPlan(ctx, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			text := strings.Join(plan, "\n")
			for i, line := range plan {
				node := strings.TrimPrefix(strings.TrimSpace(line), "->  ")
				// Several projects are merged from one page per project: SQLite orders each
				// page it merges (SCAN p0, then a B-tree of at most Limit rows).
				branch := i > 0 && strings.HasPrefix(plan[i-1], "SCAN p")
				bad := strings.Contains(line, "TEMP B-TREE") && !branch || // SQLite sorts
					strings.HasPrefix(line, "SCAN jobs") && !strings.Contains(line, "INDEX") || // SQLite reads the table
					strings.HasPrefix(node, "Sort  (") || strings.HasPrefix(node, "Incremental Sort  (") || strings.Contains(line, "Seq Scan") // PostgreSQL
				if bad {
					t.Errorf("%s: the plan sorts or scans the table:\n%s", name, text)
					break
				}
			}
		}
	})
}

// The portal's jobs page newest first, the page most read, reads on SQLite from the
// index alone (migration 0034): the first page, the next and one bounded by
// submission time. A column of store.BriefJobColumns that the index does not hold
// would have SQLite read each job's row again. PostgreSQL reads jobs_submitted and
// the rows, which its index-only scans could skip only for jobs that no longer change.
func TestBriefJobsListReadsOnlyTheIndex(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newJobsWorld(t, s)
		want := "USING COVERING INDEX jobs_submitted_brief"
		if s.Dialect() == migrations.Postgres {
			want = "Index Scan Backward using jobs_submitted on jobs"
		}
		k := store.KeyOf(&w.all[5])
		for name, f := range map[string]store.JobFilter{
			"first page":  {},
			"next page":   {After: &k},
			"from a time": {SubmittedFrom: w.all[20].SubmittedAt},
		} {
			f.Sort, f.Columns, f.Limit = store.JobsBySubmitted, store.BriefJobColumns, 26
			plan, err := s.JobsPlan(ctx, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var reads []string
			for _, line := range plan {
				if step := strings.TrimPrefix(strings.TrimSpace(line), "->  "); strings.HasPrefix(step, "SCAN jobs") ||
					strings.HasPrefix(step, "SEARCH jobs") || strings.Contains(step, " on jobs") {
					reads = append(reads, step)
				}
			}
			if len(reads) != 1 || !strings.Contains(reads[0], want) {
				t.Errorf("%s: jobs are read by %q, want one step %q:\n%s", name, reads, want, strings.Join(plan, "\n"))
			}
		}
	})
}

// A list filtered by project or state, one or several, finds its jobs in an index
// that has the project and the state before the sort key, for every sort and
// direction: no step reads jobs to filter them by project or state, so a page reads
// about as many jobs as it shows. One state within a project sorted by name walked
// the project's name index before migration 0027, reading 13 jobs per job shown. A
// user's list ("Only mine") is read from the user's index in sort order (0028), an
// image's from the image's (0029).
func TestJobsListFiltersInIndexes(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := backend.Config(t)
			s := storetest.Open(t, cfg)
			// Enough jobs that PostgreSQL's costs tell the indexes apart: on a table of a
			// page it may as well filter (state, name, id) as read (project_id, state, name, id).
			seed := seedJobs(t, cfg, s, 5000)
			projects, grace := seed.projects, seed.grace
			if err := s.AnalyzeJobs(ctx); err != nil {
				t.Fatal(err)
			}
			half, err := s.Jobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Limit: 2500})
			if err != nil || len(half) != 2500 {
				t.Fatalf("%d jobs, %v", len(half), err)
			}
			k := store.KeyOf(&half[len(half)-1])
			for _, sort := range []string{store.JobsBySubmitted, store.JobsByName, store.JobsByGPUs} {
				for _, asc := range []bool{false, true} {
					for _, f := range []store.JobFilter{
						{ProjectIDs: projects[:1], States: []string{models.JobFailed}},
						{ProjectIDs: projects[1:2], States: []string{models.JobQueued, models.JobHeld}},
						{ProjectIDs: projects[:3], States: []string{models.JobFailed, models.JobCancelled}},
						{ProjectIDs: projects[2:], States: []string{models.JobHeld}},
						{States: []string{models.JobQueued}},
						{States: []string{models.JobFailed, models.JobHeld, models.JobRunning}},
						{ProjectIDs: projects, UserID: grace},
						{ProjectIDs: projects[1:2], UserID: grace},
						{UserID: grace},
						{ImageID: seed.image},
						{ImageRef: seed.ref},
					} {
						if len(f.States) > 0 && len(f.ProjectIDs) == 0 && f.UserID == 0 && backend.Name == "postgres" {
							// Without a project PostgreSQL may walk the sort's own index, in the
							// table's order (jobs are written in submission order), rather than jump
							// about the table from the state's, when one job in eight has the state:
							// a choice by cost, which reads more index entries but fewer pages.
							continue
						}
						f.Sort, f.Ascending, f.After, f.Limit = sort, asc, &k, 26
						f.Columns = []string{"id", "name", "state"}
						plan, err := s.JobsPlan(ctx, f)
						if err != nil {
							t.Fatal(err)
						}
						if bad := filterStep(plan, f); bad != "" {
							t.Errorf("%d projects, states %v, user %t, image %t by %s (ascending %t): %q filters jobs:\n%s",
								len(f.ProjectIDs), f.States, f.UserID != 0, f.ImageID != 0 || f.ImageRef != "", sort, asc, bad, strings.Join(plan, "\n"))
						}
					}
				}
			}
		})
	}
}

// filterStep returns the step of the plan of f that reads jobs without finding them
// by what f selects, or that filters read jobs by it; "" if none does. A user's jobs
// are found by the user, filtered by project and state.
func filterStep(plan []string, f store.JobFilter) string {
	var keys []string
	switch {
	case f.UserID != 0:
		keys = []string{"user_id"}
	case len(f.ProjectIDs) > 0 || len(f.States) > 0:
		if len(f.ProjectIDs) > 0 {
			keys = append(keys, "project_id")
		}
		if len(f.States) > 0 {
			keys = append(keys, "state")
		}
	case f.ImageID != 0:
		keys = []string{"image_id"}
	case f.ImageRef != "":
		keys = []string{"image_ref"}
	}
	for _, line := range plan {
		step := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(step, "SEARCH jobs USING") && !strings.Contains(step, "PRIMARY KEY"): // SQLite
			for _, k := range keys {
				if !strings.Contains(step, k+"=?") {
					return step
				}
			}
		case strings.HasPrefix(step, "SCAN jobs"), strings.Contains(step, "TEMP B-TREE") && f.UserID != 0:
			return step
		case strings.HasPrefix(step, "Filter:"): // PostgreSQL
			for _, k := range keys {
				if strings.Contains(step, k) {
					return step
				}
			}
		}
	}
	return ""
}

// A list that names its columns reads exactly those, each into its field, and leaves
// the others zero; text with quotes, escapes and non-ASCII letters comes back as
// written (on SQLite a row comes as one JSON array).
func TestListedJobsReadNamedColumns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newJobsWorld(t, s)
		j := &models.Job{Name: "full", ProjectID: w.projects[1], UserID: w.users[1], ImageID: &w.image, ImageRef: "nvcr.io/nvidia/pytorch:24.07-py3",
			Command: `["python"]`, Env: `{"A":"1"}`, GPUs: 2, GPUMemoryMiB: 40960, GPUModel: "A100", CPUMilli: 8000, MemoryMiB: 65536,
			ScratchMiB: 1024, PriorityClass: "research", Preemptible: true, Spot: true, Replicas: 2, MaxRetries: 3, ExpectedRunSec: 3600,
			SubmittedAt: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
		if err := s.CreateJob(ctx, j, "test"); err != nil {
			t.Fatal(err)
		}
		code, retries := 3, 1
		for _, tr := range []store.Transition{
			{From: models.JobQueued, To: models.JobScheduled, Attempt: 1},
			{From: models.JobScheduled, To: models.JobRunning},
			{From: models.JobRunning, To: models.JobFailed, Reason: "exit 3: \"CUDA out of memory\" at C:\\run\tµ\n", ExitCode: &code, Retries: &retries},
		} {
			if err := s.TransitionJob(ctx, j.ID, tr); err != nil {
				t.Fatal(err)
			}
		}
		full, err := s.JobByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		cols := []string{"id", "name", "project_id", "user_id", "image_id", "image_ref", "gpus", "gpu_milli", "gpu_memory_mib",
			"gpu_model", "mig_profile", "cpu_milli", "memory_mib", "scratch_mib", "priority_class", "preemptible", "spot", "replicas",
			"max_retries", "retries", "attempt", "expected_run_sec", "state", "state_reason", "pending_reason", "exit_code",
			"submitted_at", "started_at", "finished_at"}
		got, err := s.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: cols, Limit: 2})
		if err != nil || len(got) != 2 {
			t.Fatalf("listed = %v, %v", got, err)
		}
		// The next job has no image, start or exit code: NULLs read as nil.
		next, err := s.JobByID(ctx, got[1].ID)
		if err != nil || next.ImageID != nil || next.StartedAt != nil || next.ExitCode != nil || next.FinishedAt == nil {
			t.Fatalf("the second job is %+v, %v; want one with no image, start or exit code", next, err)
		}
		for i, full := range []*models.Job{full, next} {
			want := *full
			want.Command, want.Env, want.LastCheckpointAt, want.CreatedAt, want.UpdatedAt = "", "", nil, time.Time{}, time.Time{}
			if !reflect.DeepEqual(got[i].Job, want) || got[i].ProjectName != w.projectName(want.ProjectID) || got[i].Username != w.username(want.UserID) {
				t.Fatalf("listed\n %+v\nwant\n %+v", got[i], want)
			}
		}
		// Briefs read the same of each job as ListedJobs, NULLs as nil.
		briefs, err := s.BriefJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: store.BriefJobColumns, Limit: 2})
		if err != nil || len(briefs) != 2 {
			t.Fatalf("briefs = %v, %v", briefs, err)
		}
		for i, l := range got {
			want := models.JobBrief{ID: l.ID, Name: l.Name, ProjectID: l.ProjectID, ProjectName: l.ProjectName, Username: l.Username, ImageID: l.ImageID, ImageRef: l.ImageRef,
				GPUs: l.GPUs, GPUMilli: l.GPUMilli, GPUModel: l.GPUModel, MIGProfile: l.MIGProfile, State: l.State, StateReason: l.StateReason, SubmittedAt: l.SubmittedAt}
			if !reflect.DeepEqual(briefs[i], want) {
				t.Fatalf("brief\n %+v\nwant\n %+v", briefs[i], want)
			}
		}
		if _, err := s.BriefJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"cpu_milli"}}); err == nil {
			t.Error("a column a brief does not hold was read")
		}
		brief, err := s.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"id", "state"}, Limit: 1})
		if err != nil || brief[0].ID != j.ID || brief[0].State != models.JobFailed || brief[0].Name != "" || brief[0].ExitCode != nil || brief[0].ProjectName != "segment" {
			t.Fatalf("two columns = %+v, %v", brief, err)
		}
		// Over several projects too, merged by the sort's key though the columns leave it out.
		several := store.JobFilter{Sort: store.JobsByGPUs, ProjectIDs: w.projects[:], Limit: 100}
		whole, err := s.ListedJobs(ctx, several)
		if err != nil {
			t.Fatal(err)
		}
		several.Columns = []string{"state", "id"}
		named, err := s.ListedJobs(ctx, several)
		if err != nil || len(named) != len(whole) || len(whole) != len(w.all)+1 {
			t.Fatalf("%d jobs of both projects by column, %d whole, %v; want %d", len(named), len(whole), err, len(w.all)+1)
		}
		for i := range whole {
			if n := named[i]; n.ID != whole[i].ID || n.State != whole[i].State || n.GPUs != 0 || n.ProjectName != whole[i].ProjectName || n.Username != whole[i].Username {
				t.Fatalf("job %d of both projects by column = %+v, want %+v", i, n, whole[i])
			}
		}
		if _, err := s.ListedJobs(ctx, store.JobFilter{Sort: store.JobsBySubmitted, Columns: []string{"command"}}); err == nil {
			t.Error("a column lists do not read was read")
		}
	})
}
